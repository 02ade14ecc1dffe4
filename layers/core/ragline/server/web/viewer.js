// The source viewer: the cited chunk (GET /api/v1/chunks/by-id/{id}, checked by tenant) with the sentence the
// citation backs highlighted, the chunks before and after it, and where it sits in its document (section,
// page). An extractive answer quotes the chunk word for word, so its sentence is found exactly; for a
// generated answer the chunk's sentence sharing most words with the claim is highlighted.

import { api } from './api.js';
import { byId, h } from './dom.js';
import { imageHandles, storedThumbnail } from './images.js';
import { t } from './i18n.js';

const SENTENCE = /[^.!?。！？；\n]+(?:[.!?。！？；]+["”’)\]]*|\n|$)/g;
const WORD = /[\p{L}\p{N}]+/gu;
const HAN = /[\u3400-\u9fff]/;

function termsOf(text) {
  const terms = new Set();
  for (const [word] of text.toLowerCase().matchAll(WORD)) {
    if (HAN.test(word)) {
      for (let i = 0; i + 1 < word.length; i += 1) terms.add(word.slice(i, i + 2));
    } else if (word.length > 2) {
      terms.add(word);
    }
  }
  return terms;
}

const squash = (text) => text.replace(/\s+/g, ' ').trim();

/**
 * The [start, end) range of `content` to highlight for `claim`: the sentence that holds the claim where the
 * chunk holds it (whitespace aside; the claim itself when it spans sentences), else the chunk's sentence sharing
 * the most words with it; null when none shares any.
 */
export function highlightRange(content, claim) {
  const wanted = squash(claim || '');
  if (!wanted || !content) return null;
  // Exact: walk the chunk's characters, matching the claim with runs of whitespace equal.
  const pattern = wanted
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace(/ /g, '\\s+');
  const exact = new RegExp(pattern).exec(content);
  if (exact) {
    // A quoted part of a sentence ("1849") is shown in the sentence it was taken from.
    const [start, end] = [exact.index, exact.index + exact[0].length];
    for (const match of content.matchAll(SENTENCE)) {
      const lead = match[0].length - match[0].trimStart().length;
      const [from, to] = [match.index + lead, match.index + match[0].trimEnd().length];
      if (from <= start && end <= to) return [from, to];
    }
    return [start, end];
  }
  const claimTerms = termsOf(wanted);
  if (!claimTerms.size) return null;
  let best = null;
  let bestScore = 0;
  for (const match of content.matchAll(SENTENCE)) {
    const terms = termsOf(match[0]);
    let shared = 0;
    for (const term of terms) if (claimTerms.has(term)) shared += 1;
    const score = shared / Math.sqrt(claimTerms.size * Math.max(terms.size, 1));
    if (shared && score > bestScore) {
      bestScore = score;
      const lead = match[0].length - match[0].trimStart().length;
      best = [match.index + lead, match.index + match[0].trimEnd().length];
    }
  }
  return best;
}

function withHighlight(content, range) {
  if (!range) return [content];
  const [start, end] = range;
  return [content.slice(0, start), h('mark', { class: 'claim' }, content.slice(start, end)), content.slice(end)];
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
      const range = highlightRange(chunk.content, claim);
      this.text.replaceChildren(...withHighlight(chunk.content, range));
      if (range) this.dialog.dataset.highlight = chunk.content.slice(range[0], range[1]);
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
        this.text.replaceChildren(...withHighlight(reference.content, highlightRange(reference.content, claim)));
      } else {
        this.meta.textContent = t('viewer.failed', { error: err.message });
      }
    }
  }

  /** The pictures an image passage was read from (its text is what OCR read in them). */
  showImages(chunk, doc) {
    const handles = chunk.chunk_type === 'image_ocr' || chunk.image_info ? imageHandles(chunk) : [];
    this.images.replaceChildren(
      ...handles.map((handle, i) => storedThumbnail(handle, doc ? t('image.from', { n: i + 1, title: doc }) : t('image.n', { n: i + 1 }), 'source-image')),
    );
    this.images.hidden = handles.length === 0;
  }

  showNeighbour(el, chunk, label) {
    if (!chunk || !chunk.content) return;
    const where = [label, chunk.header, chunk.metadata && chunk.metadata.page ? `page ${chunk.metadata.page}` : '']
      .filter(Boolean)
      .join(' · ');
    el.replaceChildren(h('span', { class: 'neighbour-label' }, where), h('span', { class: 'neighbour-text' }, chunk.content));
    el.dataset.chunkId = chunk.id;
    el.hidden = false;
  }
}
