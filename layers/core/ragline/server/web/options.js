// Per-session options: the request options the question API accepts, chosen in the Options dialog, sent with
// every question of the session and remembered for it in this browser (localStorage, per session id).
//
// "Default" (an empty field) sends nothing: the server's configuration decides.

import { byId, h } from './dom.js';
import { t } from './i18n.js';

const KEY = 'ragline.options.';
const NEW = 'new';

// [field, label, kind, attributes]: kind 'bool' (Default / On / Off), 'int', 'float' or 'text'.
export const FIELDS = [
  ['web_search_enabled', 'option.web_search_enabled', 'bool'],
  ['enable_rewrite', 'option.enable_rewrite', 'bool'],
  ['enable_query_expansion', 'option.enable_query_expansion', 'bool'],
  ['citation_enabled', 'option.citation_enabled', 'bool'],
  ['faq_priority_enabled', 'option.faq_priority_enabled', 'bool'],
  ['memory_enabled', 'option.memory_enabled', 'bool'],
  ['data_analysis_enabled', 'option.data_analysis_enabled', 'bool'],
  ['embedding_top_k', 'option.embedding_top_k', 'int', { min: 1, max: 500 }],
  ['rerank_top_k', 'option.rerank_top_k', 'int', { min: 1, max: 200 }],
  ['vector_threshold', 'option.vector_threshold', 'float', { min: 0, max: 1, step: 0.05 }],
  ['keyword_threshold', 'option.keyword_threshold', 'float', { min: 0, max: 1, step: 0.05 }],
  ['max_rounds', 'option.max_rounds', 'int', { min: 0, max: 50 }],
  ['temperature', 'option.temperature', 'float', { min: 0, max: 2, step: 0.1 }],
  ['max_completion_tokens', 'option.max_completion_tokens', 'int', { min: 1, max: 32768 }],
  ['language', 'option.language', 'text', { maxlength: 40, placeholder: 'option.language.placeholder' }],
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
    this.fields.replaceChildren(...FIELDS.map(([name, label, kind, attrs]) => this.field(name, t(label), kind, attrs || {})));
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
        h('option', { value: '' }, t('option.default')),
        h('option', { value: 'true' }, t('option.on')),
        h('option', { value: 'false' }, t('option.off')),
      );
    } else {
      control = h('input', {
        id,
        name,
        type: kind === 'text' ? 'text' : 'number',
        inputmode: kind === 'int' ? 'numeric' : kind === 'float' ? 'decimal' : null,
        ...attrs,
        placeholder: t(attrs.placeholder || 'option.default'),
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
    if (this.knowledgeBases.length === 0) this.kbList.append(h('p', { class: 'muted' }, t('kbs.none')));
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
