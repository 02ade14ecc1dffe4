// The knowledge-base pages: create, rename, describe and delete a knowledge base (and switch its embedding model);
// upload documents by drag-and-drop or by choosing several files (in parallel, each with its progress); add a
// text; the documents with their status (pending / indexed / failed and why), size, pages, chunks and tag, each
// deleted or re-indexed; a document's chunks (edited, searched or not); its FAQ and tags pages (kbmanage.js); and
// a search page over the knowledge base with the ranked passages and their scores.

import { api, uploadFile } from './api.js';
import { byId, confirmAction, count, formatBytes, formatDate, h } from './dom.js';
import { imageHandles, zoomableThumbnail } from './images.js';
import { t } from './i18n.js';
import { bestSentence, marked } from './passages.js';
import { chunkControls, documentTagPicker, embeddingPicker, listTags, renderFaq, renderTags } from './kbmanage.js';

/** Thumbnails of the pictures an image passage was read from, or null for a text passage. */
function passageImages(item, title) {
  const handles = item.chunk_type === 'image_ocr' || item.image_info ? imageHandles(item).slice(0, 3) : [];
  if (!handles.length) return null;
  return h('div', { class: 'ref-images' }, handles.map((handle, i) => zoomableThumbnail(handle, t('image.from', { n: i + 1, title }))));
}

/** A search hit's sentence that best matches the query, the query's terms marked, '…' where the passage goes on. */
function hitText(content, query) {
  const best = bestSentence(content, query);
  return h(
    'p',
    { class: 'hit-text', dataset: { terms: String(best.ranges.length) } },
    best.before ? '… ' : '',
    marked(best.text, best.ranges, 'term'),
    best.after ? ' …' : '',
  );
}

// The types an upload may have: the server's list (ragline.ingest.service.UPLOAD_SUFFIXES; a browser test holds
// the two together). A file of another type is refused here, in the server's words, without being sent.
export const UPLOAD_SUFFIXES = [
  '.csv', '.docx', '.epub', '.gif', '.htm', '.html', '.jpeg', '.jpg', '.json', '.log', '.markdown', '.md', '.mdx',
  '.pdf', '.png', '.pptx', '.rst', '.tab', '.text', '.tsv', '.txt', '.webp', '.xhtml', '.xlsm', '.xlsx', '.yaml', '.yml',
];
const ACCEPT = UPLOAD_SUFFIXES.join(',');

/** Why the server would refuse this file by its name, or '' (a name without an extension is read as text). */
function refusal(name) {
  const dot = name.lastIndexOf('.');
  const suffix = dot > 0 ? name.slice(dot).toLowerCase() : '';
  if (!suffix || UPLOAD_SUFFIXES.includes(suffix)) return '';
  return t('upload.refused', { suffix, list: UPLOAD_SUFFIXES.join(', ') });
}
// While a document of the shown knowledge base is pending, its list is read again this often (ms).
const PENDING_POLL_MS = 1000;
// Uploads sent at once; the others wait for a free slot.
const PARALLEL_UPLOADS = 3;

const kbPath = (kbId) => `/api/v1/knowledge-bases/${encodeURIComponent(kbId)}`;

/** A document's indexing status, as GET reports it: indexed, pending with its progress, or failed and why. */
function statusCell(doc) {
  const status = doc.status || 'indexed';
  let text = t(`status.${status}`);
  if (status === 'pending') text = t('status.pending.progress', { done: doc.embedded_count ?? 0, total: doc.chunk_count ?? 0 });
  const cell = h('td', { class: `doc-status status-${status}`, dataset: { status, label: t('col.status') } }, h('span', { class: 'status-name' }, text));
  if (status === 'failed' && doc.reason) cell.append(h('span', { class: 'doc-reason' }, doc.reason));
  return cell;
}

/** Runs `task(item)` for every item, at most `limit` at a time. */
async function inParallel(items, limit, task) {
  const queue = [...items];
  const workers = Array.from({ length: Math.min(limit, queue.length) }, async () => {
    while (queue.length) await task(queue.shift());
  });
  await Promise.all(workers);
}

export class KnowledgePage {
  constructor({ openSource = () => {}, closeDrawer = () => {} } = {}) {
    this.openSource = openSource;
    this.closeDrawer = closeDrawer;
    this.list = byId('kb-list');
    this.detail = byId('kb-detail');
    this.createForm = byId('kb-create');
    this.createError = byId('kb-create-error');
    this.kbId = null;
    this.token = 0;
    this.pendingPoll = null;
    this.createForm.addEventListener('submit', (event) => {
      event.preventDefault();
      this.create();
    });
  }

  async show(kbId, sub = '') {
    const token = ++this.token;
    this.kbId = kbId || null;
    this.createError.hidden = true;
    clearTimeout(this.pendingPoll);
    let bases;
    try {
      bases = await api('GET', '/api/v1/knowledge-bases');
    } catch (err) {
      if (err.status !== 401 && err.status !== 0) this.detail.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    if (token !== this.token) return;
    this.renderList(bases);
    if (!kbId) {
      this.detail.replaceChildren(
        h('h1', {}, t('kbs')),
        h('p', { class: 'muted' }, bases.length ? t('kbs.choose') : t('kbs.create')),
        h('ul', { class: 'kb-cards' }, bases.map((kb) => h('li', {}, h('a', { href: `#/kb/${encodeURIComponent(kb.id)}` }, kb.name), h('span', { class: 'muted' }, ` · ${count(kb.document_count, 'document')}`)))),
      );
      return;
    }
    const kb = bases.find((item) => item.id === kbId);
    if (!kb) {
      this.detail.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, t('kb.not_found')));
      return;
    }
    if (sub === 'search') {
      this.renderSearch(kb);
      return;
    }
    if (sub === 'faq' || sub === 'tags') {
      const section = h('section', { id: `kb-${sub}`, class: `kb-${sub}` });
      this.detail.replaceChildren(this.head(kb, sub), section);
      await (sub === 'faq' ? renderFaq(kb, section) : renderTags(kb, section));
      return;
    }
    this.renderDetail(kb);
    await this.loadDocuments();
  }

  renderList(items) {
    this.list.replaceChildren(
      ...items.map((kb) =>
        h(
          'li',
          {},
          h(
            'a',
            {
              href: `#/kb/${encodeURIComponent(kb.id)}`,
              class: `session-link${kb.id === this.kbId ? ' active' : ''}`,
              'aria-current': kb.id === this.kbId ? 'page' : null,
              dataset: { kbId: kb.id },
              onclick: () => this.closeDrawer(),
            },
            h('span', { class: 'session-name' }, kb.name),
            h('span', { class: 'session-date' }, count(kb.document_count, 'document')),
          ),
        ),
      ),
    );
    if (items.length === 0) this.list.append(h('li', { class: 'muted empty' }, t('kbs.none')));
  }

  async create() {
    const name = byId('kb-name').value.trim();
    const description = byId('kb-description').value.trim();
    if (!name) return;
    this.createError.hidden = true;
    try {
      const kb = await api('POST', '/api/v1/knowledge-bases', { name, description });
      this.createForm.reset();
      window.location.hash = `#/kb/${encodeURIComponent(kb.id)}`;
    } catch (err) {
      this.createError.textContent = err.message;
      this.createError.hidden = false;
    }
  }

  // The knowledge base's header: rename, describe, delete ---------------------------------------------------------
  head(kb, current) {
    const tabs = h(
      'nav',
      { class: 'tabs', 'aria-label': t('kb') },
      h('a', { href: `#/kb/${encodeURIComponent(kb.id)}`, 'aria-current': current === 'documents' ? 'page' : null }, t('documents')),
      h('a', { href: `#/kb/${encodeURIComponent(kb.id)}/faq`, 'aria-current': current === 'faq' ? 'page' : null, id: 'kb-faq-tab' }, t('faq')),
      h('a', { href: `#/kb/${encodeURIComponent(kb.id)}/tags`, 'aria-current': current === 'tags' ? 'page' : null, id: 'kb-tags-tab' }, t('tags')),
      h('a', { href: `#/kb/${encodeURIComponent(kb.id)}/search`, 'aria-current': current === 'search' ? 'page' : null, id: 'kb-search-tab' }, t('search')),
    );
    const error = h('p', { class: 'error-text', role: 'alert', hidden: true });
    const name = h('input', { type: 'text', id: 'kb-edit-name', value: kb.name, maxlength: '200', required: true });
    const description = h('textarea', { id: 'kb-edit-description', rows: '2', maxlength: '2000' });
    description.value = kb.description || '';
    const editForm = h(
      'form',
      {
        class: 'kb-edit stack',
        id: 'kb-edit',
        hidden: true,
        onsubmit: async (event) => {
          event.preventDefault();
          error.hidden = true;
          try {
            await api('PUT', kbPath(kb.id), { name: name.value.trim(), description: description.value.trim() });
            await this.show(kb.id, current === 'search' ? 'search' : '');
          } catch (err) {
            error.textContent = err.message;
            error.hidden = false;
          }
        },
      },
      h('label', { for: 'kb-edit-name' }, t('kb.name')),
      name,
      h('label', { for: 'kb-edit-description' }, t('kb.description')),
      description,
      error,
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary small' }, t('save')), h('button', { type: 'button', class: 'small', onclick: () => { editForm.hidden = true; shown.hidden = false; } }, t('cancel'))),
    );
    const shown = h(
      'div',
      { class: 'kb-title' },
      h('h1', {}, kb.name),
      h(
        'div',
        { class: 'row kb-actions' },
        h('button', { type: 'button', class: 'small', id: 'kb-rename', onclick: () => { shown.hidden = true; editForm.hidden = false; name.focus(); } }, t('kb.rename')),
        h('button', { type: 'button', class: 'small danger', id: 'kb-delete', onclick: () => this.deleteKb(kb) }, t('delete')),
      ),
    );
    return h(
      'header',
      { class: 'kb-head' },
      shown,
      editForm,
      kb.description ? h('p', { class: 'kb-description' }, kb.description) : null,
      h(
        'p',
        { class: 'muted small-text' },
        h('span', { id: 'kb-document-count' }, count(kb.document_count, 'document')),
        t('kb.meta', { created: formatDate(kb.created_at) }),
      ),
      embeddingPicker(kb, () => (current === 'documents' ? this.loadDocuments() : null)),
      tabs,
    );
  }

  async deleteKb(kb) {
    const yes = await confirmAction(t('kb.delete.confirm', { name: kb.name, documents: count(kb.document_count, 'document') }), t('kb.delete'));
    if (!yes) return;
    try {
      await api('DELETE', kbPath(kb.id));
      window.location.hash = '#/kb';
    } catch (err) {
      this.detail.prepend(h('p', { class: 'notice error', role: 'alert' }, err.message));
    }
  }

  // Documents -----------------------------------------------------------------------------------------------------
  renderDetail(kb) {
    const fileInput = h('input', { type: 'file', id: 'kb-files', multiple: true, accept: ACCEPT, class: 'visually-hidden' });
    const uploads = h('ul', { class: 'uploads', id: 'uploads', 'aria-label': t('uploads') });
    const send = (files) => {
      if (files.length) this.upload(files, uploads);
    };
    fileInput.addEventListener('change', () => {
      send([...fileInput.files]);
      fileInput.value = '';
    });
    const zone = h(
      'div',
      { class: 'dropzone', id: 'dropzone' },
      h('p', {}, h('strong', {}, t('drop.here')), ' ', h('label', { for: 'kb-files', class: 'file-label' }, t('drop.choose'))),
      h('p', { class: 'muted small-text' }, t('drop.types')),
      fileInput,
    );
    zone.addEventListener('dragover', (event) => {
      event.preventDefault();
      zone.classList.add('over');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (event) => {
      event.preventDefault();
      zone.classList.remove('over');
      send([...(event.dataTransfer ? event.dataTransfer.files : [])]);
    });
    const titleInput = h('input', { type: 'text', name: 'title', placeholder: t('col.title'), maxlength: '500', 'aria-label': t('col.title') });
    const contentInput = h('textarea', { name: 'content', rows: '4', placeholder: t('text.placeholder'), required: true, 'aria-label': t('text') });
    const textError = h('p', { class: 'error-text', hidden: true, role: 'alert' });
    const textForm = h(
      'form',
      {
        class: 'add-text',
        onsubmit: async (event) => {
          event.preventDefault();
          textError.hidden = true;
          try {
            await api('POST', `${kbPath(kb.id)}/documents`, { title: titleInput.value.trim(), content: contentInput.value });
            event.target.reset();
            await this.loadDocuments();
            await this.refreshList();
          } catch (err) {
            textError.textContent = err.message;
            textError.hidden = false;
          }
        },
      },
      h('details', {}, h('summary', {}, t('text.add')), titleInput, contentInput, textError, h('button', { type: 'submit' }, t('add'))),
    );
    this.documents = h('div', { class: 'documents', id: 'documents' });
    this.chunks = h('section', { class: 'chunks', id: 'chunks', hidden: true, 'aria-label': t('chunks') });
    this.detail.replaceChildren(this.head(kb, 'documents'), zone, uploads, textForm, h('h2', {}, t('documents')), this.documents, this.chunks);
  }

  async upload(files, uploads) {
    const kbId = this.kbId;
    const rows = files.map((file) => {
      const bar = h('progress', { max: '100', value: '0', 'aria-label': t('upload.of', { name: file.name }) });
      const status = h('span', { class: 'upload-status' }, t('upload.waiting'));
      const row = h('li', { class: 'upload-row', dataset: { state: 'waiting', file: file.name } }, h('span', { class: 'upload-name' }, file.name), bar, status);
      uploads.prepend(row);
      return { file, bar, status, row };
    });
    await inParallel(rows, PARALLEL_UPLOADS, async ({ file, bar, status, row }) => {
      const refused = refusal(file.name);
      if (refused) {
        row.dataset.state = 'error';
        status.textContent = refused;
        status.classList.add('error-text');
        return;
      }
      row.dataset.state = 'uploading';
      status.textContent = t('upload.uploading');
      try {
        const doc = await uploadFile(kbId, file, (progress) => {
          if (progress.phase === 'upload') {
            const percent = progress.total ? Math.round((100 * progress.loaded) / progress.total) : 0;
            bar.value = percent;
            status.textContent = t('upload.percent', { percent });
          } else {
            // Indeterminate while the server reads and chunks it: it may still refuse it (an unreadable PDF).
            bar.removeAttribute('value');
            status.textContent = t('upload.reading');
            row.dataset.state = 'reading';
          }
        });
        bar.value = 100;
        row.dataset.state = 'done';
        status.textContent = doc.duplicate
          ? t('upload.duplicate', { chunks: count(doc.chunk_count, 'chunk') })
          : t('upload.done', { chunks: count(doc.chunk_count, 'chunk') });
      } catch (err) {
        bar.value = 0;
        row.dataset.state = 'error';
        status.textContent = err.message;
        status.classList.add('error-text');
      }
      if (this.kbId === kbId) await this.loadDocuments();
    });
    await this.refreshList();
  }

  async refreshList() {
    try {
      this.renderList(await api('GET', '/api/v1/knowledge-bases'));
    } catch {
      // The list keeps its last state; the documents table shows what was uploaded.
    }
  }

  async loadDocuments() {
    const kbId = this.kbId;
    clearTimeout(this.pendingPoll);
    let docs;
    let tags;
    try {
      [docs, tags] = await Promise.all([api('GET', `${kbPath(kbId)}/documents?limit=1000`), listTags(kbId).catch(() => [])]);
    } catch (err) {
      this.documents.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    if (kbId !== this.kbId) return;
    // The header's count is drawn with the page: it follows the table (uploads, deletions).
    const counter = document.getElementById('kb-document-count');
    if (counter) counter.textContent = count(docs.length, 'document');
    if (docs.length === 0) {
      this.documents.replaceChildren(h('p', { class: 'muted' }, t('documents.none')));
      return;
    }
    const cell = (label, content, cls = '') => h('td', { class: cls, dataset: { label } }, content);
    const rows = docs.map((doc) =>
      h(
        'tr',
        { dataset: { documentId: doc.id, status: doc.status } },
        cell(
          t('col.title'),
          [
            h('button', { type: 'button', class: 'link', onclick: () => this.showChunks(doc) }, doc.title || doc.filename || doc.id),
            doc.filename && doc.filename !== doc.title ? h('span', { class: 'doc-file' }, doc.filename) : null,
          ],
          'doc-title',
        ),
        statusCell(doc),
        cell(t('col.size'), formatBytes(doc.size_bytes), 'num doc-size'),
        cell(t('col.pages'), doc.pages ? String(doc.pages) : '—', 'num doc-pages'),
        cell(t('chunks'), String(doc.chunk_count), 'num doc-chunks'),
        cell(t('col.tag'), documentTagPicker({ id: kbId }, doc, tags, (err) => this.documents.prepend(h('p', { class: 'notice error', role: 'alert' }, err.message))), 'doc-tag-cell'),
        cell(t('col.type'), h('span', { translate: 'no' }, doc.file_type)),
        cell(t('col.added'), formatDate(doc.created_at)),
        cell(
          t('col.actions'),
          h(
            'div',
            { class: 'row doc-actions' },
            h('button', { type: 'button', class: 'small', dataset: { action: 'reindex' }, 'aria-label': t('reindex.label', { title: doc.title || doc.filename }), disabled: doc.status === 'pending', onclick: () => this.reindex(doc) }, t('reindex')),
            h('button', { type: 'button', class: 'small danger', dataset: { action: 'delete' }, 'aria-label': t('delete.label', { title: doc.title || doc.filename }), onclick: () => this.deleteDocument(doc) }, t('delete')),
          ),
        ),
      ),
    );
    this.documents.replaceChildren(
      h(
        'table',
        { class: 'grid documents-table' },
        h('caption', { class: 'visually-hidden' }, t('documents.caption')),
        h('thead', {}, h('tr', {}, ['col.title', 'col.status', 'col.size', 'col.pages', 'chunks', 'col.tag', 'col.type', 'col.added', 'col.actions'].map((key) => h('th', { scope: 'col' }, t(key))))),
        h('tbody', {}, rows),
      ),
    );
    // Uploads answer once their chunks are stored; the vectors follow in the background (AWS: the indexing
    // function). Follow them until every document is indexed or failed.
    if (docs.some((doc) => doc.status === 'pending')) {
      this.pendingPoll = setTimeout(() => {
        if (this.kbId === kbId) this.loadDocuments();
      }, PENDING_POLL_MS);
    }
  }

  async reindex(doc) {
    try {
      await api('POST', `/api/v1/knowledge/${encodeURIComponent(doc.id)}/reparse`);
    } catch (err) {
      this.documents.prepend(h('p', { class: 'notice error', role: 'alert' }, err.message));
    }
    await this.loadDocuments();
  }

  async deleteDocument(doc) {
    const yes = await confirmAction(t('document.delete.confirm', { title: doc.title || doc.filename, chunks: count(doc.chunk_count, 'chunk') }), t('document.delete'));
    if (!yes) return;
    try {
      await api('DELETE', `/api/v1/knowledge/${encodeURIComponent(doc.id)}`);
    } catch (err) {
      this.documents.prepend(h('p', { class: 'notice error', role: 'alert' }, err.message));
    }
    if (this.chunks.dataset.documentId === doc.id) this.chunks.hidden = true;
    await this.loadDocuments();
    await this.refreshList();
  }

  async showChunks(doc) {
    this.chunks.hidden = false;
    this.chunks.dataset.documentId = doc.id;
    this.chunks.replaceChildren(h('h2', {}, t('chunks.of', { title: doc.title || doc.filename })), h('p', { class: 'muted' }, t('loading')));
    let chunks;
    try {
      chunks = await api('GET', `${kbPath(this.kbId)}/documents/${encodeURIComponent(doc.id)}/chunks`);
    } catch (err) {
      this.chunks.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    if (this.chunks.dataset.documentId !== doc.id) return;
    // Passages (what search matches) are numbered in reading order; the sections that hold them (context for
    // their passages) are named, not numbered, so no two items share a number.
    const passages = chunks.filter((c) => c.searchable).length;
    const sections = chunks.length - passages;
    let n = 0;
    this.chunks.replaceChildren(
      h('h2', {}, t('chunks.of', { title: doc.title || doc.filename })),
      h('p', { class: 'muted chunk-count' }, [count(passages, 'passage'), sections ? count(sections, 'section') : ''].filter(Boolean).join(' · ')),
      h(
        'ol',
        { class: 'chunk-list' },
        chunks.map((chunk) =>
          h(
            'li',
            { class: `chunk${chunk.searchable ? '' : ' parent'}`, dataset: { chunkId: chunk.id, enabled: String(chunk.is_enabled !== false) } },
            h(
              'div',
              { class: 'chunk-meta' },
              chunk.searchable ? t('passage.n', { n: (n += 1) }) : t('section.context'),
              chunk.header ? ` · ${chunk.header}` : '',
              chunk.metadata && chunk.metadata.page ? ` · page ${chunk.metadata.page}` : '',
              t('chunk.chars', { n: chunk.content.length }),
            ),
            passageImages(chunk, doc.title || doc.filename || t('the_document')),
            ...this.chunkBody(doc, chunk),
          ),
        ),
      ),
    );
    this.chunks.scrollIntoView({ block: 'start' });
  }

  /** A chunk's text; a passage's also whether it is searched and its text edited in place. */
  chunkBody(doc, chunk) {
    const text = h('pre', { class: 'chunk-text' }, chunk.content);
    if (!chunk.searchable) return [text];
    const { controls, form, error } = chunkControls(doc, chunk, text, (stored) => {
      const item = text.closest('li.chunk');
      if (item) item.dataset.enabled = String(stored.is_enabled !== false);
    });
    return [controls, error, text, form];
  }

  // Search ----------------------------------------------------------------------------------------------------------
  renderSearch(kb) {
    const query = h('input', { type: 'search', id: 'kb-search-query', placeholder: t('search.placeholder'), required: true, maxlength: '2000' });
    const topK = h('select', { id: 'kb-search-top-k' }, [5, 10, 20, 50].map((n) => h('option', { value: String(n), selected: n === 10 }, String(n))));
    const retrievers = h(
      'select',
      { id: 'kb-search-retrievers' },
      h('option', { value: 'hybrid' }, t('retriever.hybrid')),
      h('option', { value: 'vector' }, t('retriever.vector')),
      h('option', { value: 'keyword' }, t('retriever.keyword')),
    );
    const results = h('div', { id: 'kb-search-results', class: 'search-results', 'aria-live': 'polite' });
    const form = h(
      'form',
      {
        id: 'kb-search',
        class: 'search-form',
        role: 'search',
        onsubmit: (event) => {
          event.preventDefault();
          this.search(kb, query.value.trim(), Number(topK.value), retrievers.value, results);
        },
      },
      h('label', { for: 'kb-search-query', class: 'visually-hidden' }, t('search')),
      query,
      h('label', { for: 'kb-search-top-k' }, t('search.top')),
      topK,
      h('label', { for: 'kb-search-retrievers' }, t('search.by')),
      retrievers,
      h('button', { type: 'submit', class: 'primary' }, t('search')),
    );
    this.detail.replaceChildren(
      this.head(kb, 'search'),
      form,
      h('p', { class: 'muted small-text' }, t('search.intro')),
      results,
    );
    query.focus();
  }

  async search(kb, query, topK, retrievers, results) {
    if (!query) return;
    results.dataset.state = 'loading';
    results.replaceChildren(h('p', { class: 'muted' }, t('searching')));
    let hits;
    try {
      hits = await api('POST', '/api/v1/knowledge-search', { query, knowledge_base_ids: [kb.id], top_k: topK, retrievers });
    } catch (err) {
      results.dataset.state = 'error';
      results.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    results.dataset.state = 'done';
    results.dataset.count = String(hits.length);
    if (!hits.length) {
      results.replaceChildren(h('p', { class: 'muted' }, t('search.none')));
      return;
    }
    const score = (name, value) => (typeof value === 'number' ? h('span', { class: 'score', dataset: { score: name } }, t(`score.${name}`, { score: value.toFixed(3) })) : null);
    results.replaceChildren(
      h('p', { class: 'muted' }, t('search.count', { passages: count(hits.length, 'passage') })),
      h(
        'ol',
        { class: 'hit-list' },
        hits.map((hit) =>
          h(
            'li',
            { class: 'hit', dataset: { chunkId: hit.id, rank: String(hit.seq) } },
            h(
              'div',
              { class: 'hit-head' },
              h('span', { class: 'hit-rank' }, `#${hit.seq}`),
              h('button', { type: 'button', class: 'link hit-title', onclick: () => this.openSource({ chunkId: hit.id, doc: hit.knowledge_title, kbId: kb.id, reference: hit, claim: '' }) }, hit.knowledge_title || t('untitled')),
              hit.header ? h('span', { class: 'muted' }, hit.header) : null,
            ),
            h(
              'div',
              { class: 'hit-scores' },
              h('span', { class: 'score total', dataset: { score: 'score' } }, t('score.score', { score: hit.score.toFixed(3) })),
              score('vector', hit.scores.vector),
              score('keyword', hit.scores.keyword),
              score('rerank', hit.scores.model),
            ),
            passageImages(hit, hit.knowledge_title || t('the_document')),
            hitText(hit.content, query),
          ),
        ),
      ),
    );
  }
}
