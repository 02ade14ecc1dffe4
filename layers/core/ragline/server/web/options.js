// Per-session options: the request options the question API accepts, chosen in the Options dialog, sent with
// every question of the session and remembered for it in this browser (localStorage, per session id).
//
// "Default" (an empty field) sends nothing: the server's configuration decides.

import { byId, h } from './dom.js';

const KEY = 'ragline.options.';
const NEW = 'new';

// [field, label, kind, attributes]: kind 'bool' (Default / On / Off), 'int', 'float' or 'text'.
export const FIELDS = [
  ['web_search_enabled', 'Web search', 'bool'],
  ['enable_rewrite', 'Rewrite the question with the conversation', 'bool'],
  ['enable_query_expansion', 'Expand the question for keyword search', 'bool'],
  ['citation_enabled', 'Citations in the answer', 'bool'],
  ['faq_priority_enabled', 'FAQ answers first', 'bool'],
  ['memory_enabled', 'Long-term memory', 'bool'],
  ['data_analysis_enabled', 'Data analysis of tables', 'bool'],
  ['embedding_top_k', 'Passages retrieved (top-k)', 'int', { min: 1, max: 500 }],
  ['rerank_top_k', 'Passages kept after ranking', 'int', { min: 1, max: 200 }],
  ['vector_threshold', 'Vector score threshold', 'float', { min: 0, max: 1, step: 0.05 }],
  ['keyword_threshold', 'Keyword score threshold', 'float', { min: 0, max: 1, step: 0.05 }],
  ['max_rounds', 'Conversation rounds remembered', 'int', { min: 0, max: 50 }],
  ['temperature', 'Temperature', 'float', { min: 0, max: 2, step: 0.1 }],
  ['max_completion_tokens', 'Longest answer (tokens)', 'int', { min: 1, max: 32768 }],
  ['language', 'Answer language', 'text', { maxlength: 40, placeholder: 'e.g. English' }],
];

function load(sessionId) {
  try {
    return JSON.parse(localStorage.getItem(KEY + (sessionId || NEW)) || '{}') || {};
  } catch {
    return {};
  }
}

function store(sessionId, options) {
  const name = KEY + (sessionId || NEW);
  if (Object.keys(options).length) localStorage.setItem(name, JSON.stringify(options));
  else localStorage.removeItem(name);
}

export class SessionOptions {
  constructor({ onChange = () => {} } = {}) {
    this.onChange = onChange;
    this.sessionId = null;
    this.session = null;
    this.knowledgeBases = [];
    this.dialog = byId('options-dialog');
    this.form = byId('options-form');
    this.kbFieldset = byId('options-kbs');
    this.kbList = byId('options-kb-list');
    this.fields = byId('options-fields');
    this.fields.replaceChildren(...FIELDS.map(([name, label, kind, attrs]) => this.field(name, label, kind, attrs || {})));
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.save();
    });
    byId('options-cancel').addEventListener('click', () => this.dialog.close());
    byId('options-reset').addEventListener('click', () => {
      this.form.reset();
      for (const box of this.kbList.querySelectorAll('input')) box.checked = this.defaultKbs().includes(box.value);
    });
  }

  field(name, label, kind, attrs) {
    const id = `opt-${name}`;
    let control;
    if (kind === 'bool') {
      control = h(
        'select',
        { id, name },
        h('option', { value: '' }, 'Default'),
        h('option', { value: 'true' }, 'On'),
        h('option', { value: 'false' }, 'Off'),
      );
    } else {
      control = h('input', {
        id,
        name,
        type: kind === 'text' ? 'text' : 'number',
        inputmode: kind === 'int' ? 'numeric' : kind === 'float' ? 'decimal' : null,
        placeholder: attrs.placeholder || 'Default',
        ...attrs,
        dataset: { kind },
      });
    }
    return h('div', { class: 'option' }, h('label', { for: id }, label), control);
  }

  /** Moves the options chosen for a new session to the session once it exists. */
  adopt(sessionId) {
    const pending = load(null);
    if (Object.keys(pending).length) {
      store(sessionId, pending);
      store(null, {});
    }
  }

  use(sessionId, session, knowledgeBases) {
    this.sessionId = sessionId;
    this.session = session;
    this.knowledgeBases = knowledgeBases;
  }

  defaultKbs() {
    return this.session ? this.session.knowledge_base_ids : [];
  }

  /** The chat model chosen for this session ('' for the server's default). */
  get model() {
    return load(this.sessionId).summary_model_id || '';
  }

  set model(modelId) {
    const saved = load(this.sessionId);
    if (modelId) saved.summary_model_id = modelId;
    else delete saved.summary_model_id;
    store(this.sessionId, saved);
  }

  /** The fields to send with a question (knowledge_base_ids only when it differs from the session's). */
  request() {
    const saved = load(this.sessionId);
    const body = {};
    if (saved.summary_model_id) body.summary_model_id = saved.summary_model_id;
    for (const [name, , kind] of FIELDS) {
      const value = saved[name];
      if (value === undefined || value === '' || value === null) continue;
      body[name] = kind === 'bool' ? value === true || value === 'true' : value;
    }
    if (this.session && Array.isArray(saved.knowledge_base_ids)) body.knowledge_base_ids = saved.knowledge_base_ids;
    return body;
  }

  /** How many options differ from the defaults (shown on the Options button). */
  count() {
    // The model has its own picker beside the Options button.
    return Object.keys(this.request()).filter((name) => name !== 'summary_model_id').length;
  }

  open() {
    const saved = load(this.sessionId);
    for (const [name, , kind] of FIELDS) {
      const control = this.form.elements[name];
      const value = saved[name];
      control.value = value === undefined || value === null ? '' : kind === 'bool' ? String(value) : String(value);
    }
    this.kbFieldset.hidden = !this.session;
    const chosen = Array.isArray(saved.knowledge_base_ids) ? saved.knowledge_base_ids : this.defaultKbs();
    this.kbList.replaceChildren(
      ...this.knowledgeBases.map((kb) =>
        h(
          'label',
          { class: 'check' },
          h('input', { type: 'checkbox', name: 'option-kb', value: kb.id, checked: chosen.includes(kb.id) }),
          h('span', {}, kb.name),
        ),
      ),
    );
    if (this.knowledgeBases.length === 0) this.kbList.append(h('p', { class: 'muted' }, 'No knowledge bases.'));
    this.dialog.showModal();
  }

  save() {
    const options = {};
    if (this.model) options.summary_model_id = this.model;
    for (const [name, , kind] of FIELDS) {
      const control = this.form.elements[name];
      if (!control.value.trim()) continue;
      if (kind === 'bool') options[name] = control.value === 'true';
      else if (kind === 'text') options[name] = control.value.trim();
      else {
        const number = Number(control.value);
        if (!Number.isFinite(number)) continue;
        options[name] = kind === 'int' ? Math.round(number) : number;
      }
    }
    if (this.session) {
      const chosen = [...this.kbList.querySelectorAll('input:checked')].map((box) => box.value);
      const same = chosen.length === this.defaultKbs().length && chosen.every((id) => this.defaultKbs().includes(id));
      if (!same) options.knowledge_base_ids = chosen;
    }
    store(this.sessionId, options);
    this.dialog.close();
    this.onChange();
  }
}
