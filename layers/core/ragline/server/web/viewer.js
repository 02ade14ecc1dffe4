// The source viewer: the cited chunk (GET /api/v1/chunks/by-id/{id}, checked by tenant) with the sentence the
// citation backs highlighted, the chunks before and after it, and where it sits in its document (section,
// page), each rendered as Markdown (markdown.js: it never parses HTML, so a passage cannot inject any). An
// extractive answer quotes the chunk word for word, so its sentence is found exactly; for a generated answer the
// chunk's sentence sharing most words with the claim is highlighted.

import { api } from './api.js';
import { byId, h } from './dom.js';
import { imageHandles, zoomableThumbnail } from './images.js';
import { t } from './i18n.js';
import { renderMarkdown } from './markdown.js';
import { highlightRendered } from './passages.js';

export { highlightRange } from './passages.js';

/**
 * A passage rendered as Markdown (its headings below the viewer's own title) into `el`, the sentence `claim`
 * comes from highlighted; returns the highlighted text ('' when none). Nothing in it is parsed as HTML.
 */
function showPassage(el, content, claim) {
  el.replaceChildren(
    renderMarkdown(content, {
      headingOffset: 2,
      // A passage quoting a citation tag shows it as written.
      renderCitation: (citation) => document.createTextNode(citation.raw),
    }),
  );
  return claim ? highlightRendered(el, claim) : '';
}

async function neighbour(id) {
  if (!id) return null;
  try {
    return await api('GET', `/api/v1/chunks/by-id/${encodeURIComponent(id)}`);
  } catch {
    return null; // a neighbour that cannot be read is left out; the cited chunk is what matters
  }
}

export class SourceViewer {
  constructor() {
    this.dialog = byId('source-dialog');
    this.title = byId('source-title');
    this.meta = byId('source-meta');
    this.text = byId('source-text');
    this.images = byId('source-images');
    this.before = byId('source-before');
    this.after = byId('source-after');
    byId('source-close').addEventListener('click', () => this.dialog.close());
    // A click on the backdrop (outside the dialog's box) closes it.
    this.dialog.addEventListener('click', (event) => {
      if (event.target === this.dialog) this.dialog.close();
    });
  }

  /** citation: {chunkId, doc, kbId, reference, claim} (reference: the turn's reference for it, if any). */
  async open({ chunkId, doc, reference, claim = '' }) {
    this.dialog.dataset.chunkId = chunkId;
    this.dialog.dataset.state = 'loading';
    delete this.dialog.dataset.highlight;
    this.title.textContent = doc || t('source');
    this.meta.textContent = t('viewer.loading');
    this.text.textContent = '';
    this.images.replaceChildren();
    this.images.hidden = true;
    this.before.replaceChildren();
    this.after.replaceChildren();
    this.before.hidden = true;
    this.after.hidden = true;
    if (!this.dialog.open) this.dialog.showModal();
    try {
      const chunk = await api('GET', `/api/v1/chunks/by-id/${encodeURIComponent(chunkId)}`);
      if (this.dialog.dataset.chunkId !== chunkId) return; // another chip was opened meanwhile
      const meta = [t('passage.n', { n: chunk.chunk_index + 1 })];
      if (chunk.header) meta.push(chunk.header);
      if (chunk.metadata && chunk.metadata.page) meta.push(`page ${chunk.metadata.page}`);
      this.meta.textContent = meta.join(' · ');
      this.showImages(chunk, doc);
      const highlighted = showPassage(this.text, chunk.content, claim);
      if (highlighted) this.dialog.dataset.highlight = highlighted;
      this.dialog.dataset.state = 'loaded';
      this.text.querySelector('mark')?.scrollIntoView({ block: 'center' });
      const [previous, following] = await Promise.all([neighbour(chunk.pre_chunk_id), neighbour(chunk.next_chunk_id)]);
      if (this.dialog.dataset.chunkId !== chunkId) return;
      this.showNeighbour(this.before, previous, t('viewer.before'));
      this.showNeighbour(this.after, following, t('viewer.after'));
      this.dialog.dataset.neighbours = String(Number(Boolean(previous)) + Number(Boolean(following)));
    } catch (err) {
      if (this.dialog.dataset.chunkId !== chunkId) return;
      this.dialog.dataset.state = 'error';
      if (reference && reference.content) {
        this.meta.textContent = t('viewer.fallback', { error: err.message });
        showPassage(this.text, reference.content, claim);
      } else {
        this.meta.textContent = t('viewer.failed', { error: err.message });
      }
    }
  }

  /** The pictures an image passage was read from (its text is what OCR read in them). */
  showImages(chunk, doc) {
    const handles = chunk.chunk_type === 'image_ocr' || chunk.image_info ? imageHandles(chunk) : [];
    this.images.replaceChildren(
      ...handles.map((handle, i) => zoomableThumbnail(handle, doc ? t('image.from', { n: i + 1, title: doc }) : t('image.n', { n: i + 1 }), 'source-image')),
    );
    this.images.hidden = handles.length === 0;
  }

  showNeighbour(el, chunk, label) {
    if (!chunk || !chunk.content) return;
    const where = [label, chunk.header, chunk.metadata && chunk.metadata.page ? `page ${chunk.metadata.page}` : '']
      .filter(Boolean)
      .join(' · ');
    const text = h('div', { class: 'neighbour-text markdown' });
    showPassage(text, chunk.content, '');
    el.replaceChildren(h('span', { class: 'neighbour-label' }, where), text);
    el.dataset.chunkId = chunk.id;
    el.hidden = false;
  }
}
