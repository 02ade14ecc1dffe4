// The knowledge-base page: create a knowledge base, upload documents (with progress), add a text, list the
// documents and each document's chunks.

import { api, uploadFile } from './api.js';
import { byId, count, formatDate, h } from './dom.js';

const ACCEPT = '.md,.markdown,.txt,.text,.pdf,.html,.htm,.docx,.pptx,.epub,.csv,.tsv,.xlsx';
// While a document of the shown knowledge base is pending, its list is read again this often (ms).
const PENDING_POLL_MS = 1000;

/** A document's indexing status, as GET reports it: indexed, pending with its progress, or failed and why. */
function statusCell(doc) {
  const status = doc.status || 'indexed';
  let text = status;
  if (status === 'pending') text = `pending ${doc.embedded_count ?? 0}/${doc.chunk_count ?? 0}`;
  if (status === 'failed') text = doc.reason ? `failed: ${doc.reason}` : 'failed';
  return h('td', { class: `doc-status status-${status}`, dataset: { status }, title: doc.reason || '' }, text);
}

export class KnowledgePage {
  constructor() {
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

  async show(kbId) {
    const token = ++this.token;
    this.kbId = kbId || null;
    this.createError.hidden = true;
    let bases;
    try {
      bases = await api('GET', '/api/v1/knowledge-bases');
    } catch (err) {
      this.detail.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    if (token !== this.token) return;
    this.renderList(bases);
    if (!kbId) {
      this.detail.replaceChildren(
        h('p', { class: 'muted' }, 'Choose a knowledge base, or create one, to upload documents and browse them.'),
      );
      return;
    }
    const kb = bases.find((item) => item.id === kbId);
    if (!kb) {
      this.detail.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, 'Knowledge base not found.'));
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
              dataset: { kbId: kb.id },
            },
            h('span', { class: 'session-name' }, kb.name),
            h('span', { class: 'session-date' }, count(kb.document_count, 'document')),
          ),
        ),
      ),
    );
    if (items.length === 0) this.list.append(h('li', { class: 'muted empty' }, 'No knowledge bases yet.'));
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

  renderDetail(kb) {
    const fileInput = h('input', { type: 'file', id: 'kb-files', multiple: true, accept: ACCEPT });
    const uploads = h('ul', { class: 'uploads', id: 'uploads' });
    const uploadForm = h(
      'form',
      {
        class: 'upload',
        id: 'kb-upload',
        onsubmit: (event) => {
          event.preventDefault();
          this.upload([...fileInput.files], uploads).then(() => {
            fileInput.value = '';
          });
        },
      },
      h('label', { for: 'kb-files' }, 'Upload documents (Markdown, text, PDF, HTML)'),
      h('div', { class: 'row' }, fileInput, h('button', { type: 'submit', class: 'primary' }, 'Upload')),
    );
    const titleInput = h('input', { type: 'text', name: 'title', placeholder: 'Title', maxlength: '500' });
    const contentInput = h('textarea', { name: 'content', rows: '4', placeholder: 'Markdown or plain text', required: true });
    const textError = h('p', { class: 'error-text', hidden: true, role: 'alert' });
    const textForm = h(
      'form',
      {
        class: 'add-text',
        onsubmit: async (event) => {
          event.preventDefault();
          textError.hidden = true;
          try {
            await api('POST', `/api/v1/knowledge-bases/${encodeURIComponent(kb.id)}/documents`, {
              title: titleInput.value.trim(),
              content: contentInput.value,
            });
            event.target.reset();
            await this.loadDocuments();
            await this.refreshList();
          } catch (err) {
            textError.textContent = err.message;
            textError.hidden = false;
          }
        },
      },
      h('details', {}, h('summary', {}, 'Add a text'), titleInput, contentInput, textError, h('button', { type: 'submit' }, 'Add')),
    );
    this.documents = h('div', { class: 'documents', id: 'documents' });
    this.chunks = h('section', { class: 'chunks', id: 'chunks', hidden: true });
    this.detail.replaceChildren(
      h(
        'header',
        { class: 'kb-head' },
        h('h1', {}, kb.name),
        kb.description ? h('p', {}, kb.description) : null,
        h('p', { class: 'muted' }, `id ${kb.id} · created ${formatDate(kb.created_at)}`),
      ),
      uploadForm,
      uploads,
      textForm,
      h('h2', {}, 'Documents'),
      this.documents,
      this.chunks,
    );
  }

  async upload(files, uploads) {
    const kbId = this.kbId;
    for (const file of files) {
      const bar = h('progress', { max: '100', value: '0' });
      const status = h('span', { class: 'upload-status' }, 'uploading…');
      const row = h('li', { class: 'upload-row', dataset: { state: 'uploading' } }, h('span', { class: 'upload-name' }, file.name), bar, status);
      uploads.prepend(row);
      try {
        const doc = await uploadFile(kbId, file, (progress) => {
          if (progress.phase === 'upload') {
            const percent = progress.total ? Math.round((100 * progress.loaded) / progress.total) : 0;
            bar.value = percent;
            status.textContent = `uploading… ${percent}%`;
          } else {
            bar.removeAttribute('value'); // indeterminate while the server chunks and indexes it
            status.textContent = 'indexing…';
            row.dataset.state = 'indexing';
          }
        });
        bar.value = 100;
        row.dataset.state = 'done';
        status.textContent = doc.duplicate
          ? `already in this knowledge base (${count(doc.chunk_count, 'chunk')})`
          : `✓ ${count(doc.chunk_count, 'chunk')}`;
      } catch (err) {
        bar.value = 0;
        row.dataset.state = 'error';
        status.textContent = err.message;
        status.classList.add('error-text');
      }
      if (this.kbId === kbId) await this.loadDocuments();
    }
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
    try {
      docs = await api('GET', `/api/v1/knowledge-bases/${encodeURIComponent(kbId)}/documents?limit=1000`);
    } catch (err) {
      this.documents.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    if (kbId !== this.kbId) return;
    if (docs.length === 0) {
      this.documents.replaceChildren(h('p', { class: 'muted' }, 'No documents yet.'));
      return;
    }
    const rows = docs.map((doc) =>
      h(
        'tr',
        { dataset: { documentId: doc.id } },
        h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => this.showChunks(doc) }, doc.title || doc.filename || doc.id)),
        h('td', {}, doc.filename || '—'),
        h('td', {}, doc.file_type),
        h('td', { class: 'num' }, String(doc.chunk_count)),
        statusCell(doc),
        h('td', {}, (doc.tags || []).join(', ')),
        h('td', {}, formatDate(doc.created_at)),
      ),
    );
    this.documents.replaceChildren(
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'grid' },
          h('thead', {}, h('tr', {}, ['Title', 'File', 'Type', 'Chunks', 'Status', 'Tags', 'Added'].map((t) => h('th', {}, t)))),
          h('tbody', {}, rows),
        ),
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

  async showChunks(doc) {
    this.chunks.hidden = false;
    this.chunks.dataset.documentId = doc.id;
    this.chunks.replaceChildren(h('h2', {}, `Chunks of ${doc.title || doc.filename}`), h('p', { class: 'muted' }, 'Loading…'));
    let chunks;
    try {
      chunks = await api(
        'GET',
        `/api/v1/knowledge-bases/${encodeURIComponent(this.kbId)}/documents/${encodeURIComponent(doc.id)}/chunks`,
      );
    } catch (err) {
      this.chunks.replaceChildren(h('p', { class: 'notice error', role: 'alert' }, err.message));
      return;
    }
    if (this.chunks.dataset.documentId !== doc.id) return;
    this.chunks.replaceChildren(
      h('h2', {}, `Chunks of ${doc.title || doc.filename} · ${chunks.length}`),
      h(
        'ol',
        { class: 'chunk-list' },
        chunks.map((chunk) =>
          h(
            'li',
            { class: 'chunk', dataset: { chunkId: chunk.id } },
            h(
              'div',
              { class: 'chunk-meta' },
              `#${chunk.chunk_index + 1}`,
              chunk.header ? ` · ${chunk.header}` : '',
              chunk.searchable ? '' : ' · parent (context for its children)',
              ` · ${chunk.content.length} characters`,
            ),
            h('pre', { class: 'chunk-text' }, chunk.content),
          ),
        ),
      ),
    );
    this.chunks.scrollIntoView({ block: 'start', behavior: 'smooth' });
  }
}
