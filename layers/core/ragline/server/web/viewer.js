// The source viewer: the cited chunk's text, fetched by id (GET /api/v1/chunks/by-id/{id}, checked by tenant).

import { api } from './api.js';
import { byId } from './dom.js';

export class SourceViewer {
  constructor() {
    this.dialog = byId('source-dialog');
    this.title = byId('source-title');
    this.meta = byId('source-meta');
    this.text = byId('source-text');
    byId('source-close').addEventListener('click', () => this.dialog.close());
    // A click on the backdrop (outside the dialog's box) closes it.
    this.dialog.addEventListener('click', (event) => {
      if (event.target === this.dialog) this.dialog.close();
    });
  }

  /** citation: {chunkId, doc, kbId, reference} (reference: the turn's reference for it, if any). */
  async open({ chunkId, doc, reference }) {
    this.dialog.dataset.chunkId = chunkId;
    this.dialog.dataset.state = 'loading';
    this.title.textContent = doc || 'Source';
    this.meta.textContent = 'Loading the passage…';
    this.text.textContent = '';
    if (!this.dialog.open) this.dialog.showModal();
    try {
      const chunk = await api('GET', `/api/v1/chunks/by-id/${encodeURIComponent(chunkId)}`);
      if (this.dialog.dataset.chunkId !== chunkId) return; // another chip was opened meanwhile
      const meta = [`Passage ${chunk.chunk_index + 1}`];
      if (chunk.header) meta.push(chunk.header);
      if (chunk.metadata && chunk.metadata.page) meta.push(`page ${chunk.metadata.page}`);
      this.meta.textContent = meta.join(' · ');
      this.text.textContent = chunk.content;
      this.dialog.dataset.state = 'loaded';
    } catch (err) {
      if (this.dialog.dataset.chunkId !== chunkId) return;
      this.dialog.dataset.state = 'error';
      if (reference && reference.content) {
        this.meta.textContent = `The stored passage could not be loaded (${err.message}); the text the answer saw:`;
        this.text.textContent = reference.content;
      } else {
        this.meta.textContent = `The passage could not be loaded: ${err.message}`;
      }
    }
  }
}
