// What the knowledge-base pages manage beside documents: its embedding model (switched, its documents embedded
// again in the background), its tags (created, renamed, recoloured, deleted, given to documents), its FAQ entries
// (a question, its answers and similar questions: added, edited, enabled or not, deleted) and a document's chunks
// (their text edited, each searched or not). Everything goes through the API's own routes.

import { api } from './api.js';
import { confirmAction, count, h, toast } from './dom.js';
import { t } from './i18n.js';

const kbPath = (kbId) => `/api/v1/knowledge-bases/${encodeURIComponent(kbId)}`;

/** An error shown in place (role=alert), or hidden when `error` is null. */
function showError(el, error) {
  el.textContent = error ? error.message : '';
  el.hidden = !error;
}

// The embedding model ----------------------------------------------------------------------------------------------
/**
 * The knowledge base's embedding model as a picker of the deployment's (GET /models, type Embedding); choosing
 * another asks first, then switches (PUT …/embedding-model) and calls onSwitched() (its documents go pending while
 * their vectors are computed again).
 */
export function embeddingPicker(kb, onSwitched) {
  const select = h('select', { id: 'kb-embedding-model', translate: 'no' }, h('option', { value: kb.embedding_model }, kb.embedding_model));
  const error = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const field = h('div', { class: 'row kb-embedding' }, h('label', { for: 'kb-embedding-model' }, t('embedding.model')), select, error);
  api('GET', '/api/v1/models').then(
    (models) => {
      const embedders = models.filter((m) => m.type === 'Embedding');
      if (!embedders.some((m) => m.id === kb.embedding_model)) embedders.unshift({ id: kb.embedding_model, name: kb.embedding_model });
      select.replaceChildren(...embedders.map((m) => h('option', { value: m.id, selected: m.id === kb.embedding_model }, m.name)));
      select.disabled = embedders.length < 2;
    },
    () => {},
  );
  select.addEventListener('change', async () => {
    const model = select.value;
    const yes = await confirmAction(t('embedding.confirm', { name: kb.name, model, documents: count(kb.document_count, 'document') }), t('embedding.switch'));
    if (!yes) {
      select.value = kb.embedding_model;
      return;
    }
    showError(error, null);
    try {
      const updated = await api('PUT', `${kbPath(kb.id)}/embedding-model`, { embedding_model: model });
      kb.embedding_model = updated.embedding_model_id || model;
      toast(t('embedding.switched', { model }));
      onSwitched();
    } catch (err) {
      select.value = kb.embedding_model;
      showError(error, err);
    }
  });
  return field;
}

// Tags -------------------------------------------------------------------------------------------------------------
const TAG_COLOURS = ['#2f5bea', '#1e7a3c', '#b45309', '#c2352b', '#7c3aed', '#0f6e7a'];

/** The knowledge base's tags (GET …/tags), every one. */
export async function listTags(kbId) {
  const page = await api('GET', `${kbPath(kbId)}/tags?page_size=1000`);
  return page.data;
}

/** A tag's colour swatch (decorative: the tag's name says it). Coloured through the CSSOM: the page's CSP allows no
 * style attribute. */
function swatch(color) {
  const el = h('span', { class: 'tag-swatch', 'aria-hidden': 'true' });
  if (/^#[0-9a-f]{3,8}$/i.test(color || '')) el.style.background = color;
  return el;
}

/** The tags page: a form for a new tag, then each tag (its documents and chunks counted) to rename, recolour or delete. */
export async function renderTags(kb, root) {
  const error = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const list = h('ul', { class: 'tag-list', id: 'tag-list' });
  const name = h('input', { type: 'text', id: 'tag-name', maxlength: '100', required: true, placeholder: t('tag.name') });
  const color = h('select', { id: 'tag-color' }, TAG_COLOURS.map((c, i) => h('option', { value: c }, t(`tag.color.${i}`))));
  const reload = async () => {
    let tags;
    try {
      tags = await listTags(kb.id);
    } catch (err) {
      showError(error, err);
      return;
    }
    list.dataset.count = String(tags.length);
    list.replaceChildren(...(tags.length ? tags.map((tag) => tagRow(kb, tag, reload, error)) : [h('li', { class: 'muted' }, t('tags.none'))]));
  };
  const form = h(
    'form',
    {
      id: 'tag-create',
      class: 'row tag-create',
      onsubmit: async (event) => {
        event.preventDefault();
        showError(error, null);
        try {
          await api('POST', `${kbPath(kb.id)}/tags`, { name: name.value.trim(), color: color.value });
          form.reset();
          await reload();
        } catch (err) {
          showError(error, err);
        }
      },
    },
    h('label', { for: 'tag-name', class: 'visually-hidden' }, t('tag.name')),
    name,
    h('label', { for: 'tag-color' }, t('tag.color')),
    color,
    h('button', { type: 'submit', class: 'primary' }, t('tag.create')),
  );
  root.replaceChildren(h('h2', {}, t('tags')), h('p', { class: 'muted small-text' }, t('tags.intro')), form, error, list);
  await reload();
}

function tagRow(kb, tag, reload, error) {
  const path = `${kbPath(kb.id)}/tags/${encodeURIComponent(tag.id)}`;
  const shown = h(
    'div',
    { class: 'tag-row' },
    swatch(tag.color),
    h('span', { class: 'tag-name', translate: 'no' }, tag.name),
    h('span', { class: 'muted small-text' }, `${count(tag.knowledge_count, 'document')} · ${count(tag.chunk_count, 'chunk')}`),
    h('button', { type: 'button', class: 'small', dataset: { action: 'rename' }, 'aria-label': t('tag.rename.label', { name: tag.name }), onclick: () => { shown.hidden = true; edit.hidden = false; input.focus(); } }, t('rename')),
    h(
      'button',
      {
        type: 'button',
        class: 'small danger',
        dataset: { action: 'delete' },
        'aria-label': t('tag.delete.label', { name: tag.name }),
        onclick: async () => {
          const inUse = tag.knowledge_count > 0;
          const yes = await confirmAction(inUse ? t('tag.delete.in_use', { name: tag.name, documents: count(tag.knowledge_count, 'document') }) : t('tag.delete.confirm', { name: tag.name }), t('delete'));
          if (!yes) return;
          showError(error, null);
          try {
            await api('DELETE', `${path}${inUse ? '?force=true' : ''}`);
            await reload();
          } catch (err) {
            showError(error, err);
          }
        },
      },
      t('delete'),
    ),
  );
  const input = h('input', { type: 'text', value: tag.name, maxlength: '100', required: true, 'aria-label': t('tag.name') });
  const colour = h('select', { 'aria-label': t('tag.color') }, TAG_COLOURS.map((c, i) => h('option', { value: c, selected: c === tag.color }, t(`tag.color.${i}`))));
  const edit = h(
    'form',
    {
      class: 'row tag-edit',
      hidden: true,
      onsubmit: async (event) => {
        event.preventDefault();
        showError(error, null);
        try {
          await api('PUT', path, { name: input.value.trim(), color: colour.value });
          await reload();
        } catch (err) {
          showError(error, err);
        }
      },
    },
    input,
    colour,
    h('button', { type: 'submit', class: 'small primary' }, t('save')),
    h('button', { type: 'button', class: 'small', onclick: () => { edit.hidden = true; shown.hidden = false; } }, t('cancel')),
  );
  return h('li', { class: 'tag-item', dataset: { tagId: tag.id } }, shown, edit);
}

/** A document's tag as a picker (no tag, or one of `tags`); choosing one sets it (PUT /knowledge/tags). */
export function documentTagPicker(kb, doc, tags, onError) {
  const current = (doc.tags || [])[0] || '';
  const select = h(
    'select',
    { class: 'doc-tag', 'aria-label': t('tag.of', { title: doc.title || doc.filename }), dataset: { documentId: doc.id } },
    h('option', { value: '' }, t('tag.none')),
    tags.map((tag) => h('option', { value: tag.id, selected: tag.id === current || tag.name === current, translate: 'no' }, tag.name)),
  );
  select.addEventListener('change', async () => {
    try {
      await api('PUT', '/api/v1/knowledge/tags', { kb_id: kb.id, updates: { [doc.id]: select.value || null } });
      doc.tags = select.value ? [select.value] : [];
      select.dataset.saved = select.value;
    } catch (err) {
      select.value = current;
      onError(err);
    }
  });
  return select;
}

// FAQ --------------------------------------------------------------------------------------------------------------
const lines = (text) => text.split('\n').map((line) => line.trim()).filter(Boolean);

/** The FAQ page: a form for an entry, then the entries (most recent first), each to edit, enable or delete. */
export async function renderFaq(kb, root) {
  const error = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const list = h('ol', { class: 'faq-list', id: 'faq-list' });
  const reload = async () => {
    let page;
    try {
      page = await api('GET', `${kbPath(kb.id)}/faq/entries?page_size=200`);
    } catch (err) {
      showError(error, err);
      return;
    }
    list.dataset.count = String(page.total);
    list.replaceChildren(...(page.data.length ? page.data.map((entry) => faqItem(kb, entry, reload, error)) : [h('li', { class: 'muted' }, t('faq.none'))]));
  };
  const form = faqForm('faq-new', null, async (payload) => {
    await api('POST', `${kbPath(kb.id)}/faq/entry`, payload);
    await reload();
  });
  root.replaceChildren(
    h('h2', {}, t('faq')),
    h('p', { class: 'muted small-text' }, t('faq.intro')),
    h('details', { class: 'faq-add' }, h('summary', {}, t('faq.add')), form),
    error,
    list,
  );
  await reload();
}

/** The form of an entry (`entry` null: a new one); `save(payload)` sends it and may throw (shown in the form). */
function faqForm(id, entry, save, cancel = null) {
  const question = h('input', { type: 'text', id: `${id}-question`, maxlength: '2000', required: true, value: entry ? entry.standard_question : '' });
  const answer = h('textarea', { id: `${id}-answer`, rows: '3', maxlength: '20000', required: true });
  answer.value = entry ? entry.answers.join('\n') : '';
  const similar = h('textarea', { id: `${id}-similar`, rows: '2' });
  similar.value = entry ? entry.similar_questions.join('\n') : '';
  const error = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const form = h(
    'form',
    {
      class: 'stack faq-form',
      id,
      onsubmit: async (event) => {
        event.preventDefault();
        showError(error, null);
        const payload = {
          standard_question: question.value.trim(),
          answers: [answer.value.trim()],
          similar_questions: lines(similar.value),
        };
        try {
          await save(payload);
          if (!entry) form.reset();
        } catch (err) {
          showError(error, err);
        }
      },
    },
    h('label', { for: `${id}-question` }, t('faq.question')),
    question,
    h('label', { for: `${id}-answer` }, t('faq.answer')),
    answer,
    h('label', { for: `${id}-similar` }, t('faq.similar')),
    similar,
    error,
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary small' }, entry ? t('save') : t('add')), cancel ? h('button', { type: 'button', class: 'small', onclick: cancel }, t('cancel')) : null),
  );
  return form;
}

function faqItem(kb, entry, reload, error) {
  const path = `${kbPath(kb.id)}/faq/entries/${entry.id}`;
  const payloadOf = (enabled) => ({
    standard_question: entry.standard_question,
    answers: entry.answers,
    similar_questions: entry.similar_questions,
    negative_questions: entry.negative_questions,
    is_enabled: enabled,
  });
  const enabled = h('input', { type: 'checkbox', id: `faq-enabled-${entry.id}`, checked: entry.is_enabled });
  enabled.addEventListener('change', async () => {
    showError(error, null);
    try {
      await api('PUT', path, payloadOf(enabled.checked));
      item.dataset.enabled = String(enabled.checked);
    } catch (err) {
      enabled.checked = !enabled.checked;
      showError(error, err);
    }
  });
  const shown = h(
    'div',
    { class: 'faq-entry' },
    h('p', { class: 'faq-question' }, entry.standard_question),
    entry.similar_questions.length ? h('p', { class: 'muted small-text faq-similar' }, t('faq.also', { questions: entry.similar_questions.join(' · ') })) : null,
    h('p', { class: 'faq-answer' }, entry.answers.join('\n')),
    h(
      'div',
      { class: 'row faq-actions' },
      h('label', { class: 'check', for: `faq-enabled-${entry.id}` }, enabled, h('span', {}, t('faq.enabled'))),
      h('button', { type: 'button', class: 'small', dataset: { action: 'edit' }, 'aria-label': t('faq.edit.label', { question: entry.standard_question }), onclick: () => { shown.hidden = true; form.hidden = false; form.querySelector('input').focus(); } }, t('edit')),
      h(
        'button',
        {
          type: 'button',
          class: 'small danger',
          dataset: { action: 'delete' },
          'aria-label': t('faq.delete.label', { question: entry.standard_question }),
          onclick: async () => {
            if (!(await confirmAction(t('faq.delete.confirm', { question: entry.standard_question })))) return;
            showError(error, null);
            try {
              await api('DELETE', `${kbPath(kb.id)}/faq/entries`, { ids: [entry.id] });
              await reload();
            } catch (err) {
              showError(error, err);
            }
          },
        },
        t('delete'),
      ),
    ),
  );
  const form = faqForm(
    `faq-edit-${entry.id}`,
    entry,
    async (payload) => {
      await api('PUT', path, { ...payload, negative_questions: entry.negative_questions, is_enabled: enabled.checked });
      await reload();
    },
    () => {
      form.hidden = true;
      shown.hidden = false;
    },
  );
  form.hidden = true;
  const item = h('li', { class: 'faq-item', dataset: { entryId: String(entry.id), enabled: String(entry.is_enabled) } }, shown, form);
  return item;
}

// Chunks -----------------------------------------------------------------------------------------------------------
/**
 * A searchable chunk's controls: whether it is searched (PUT is_enabled) and its text edited in place (PUT content:
 * embedded and indexed again). `textEl` shows the text; onChanged(chunk) gets the stored chunk after a change.
 */
export function chunkControls(doc, chunk, textEl, onChanged = () => {}) {
  const path = `/api/v1/chunks/${encodeURIComponent(doc.id)}/${encodeURIComponent(chunk.id)}`;
  const error = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const enabled = h('input', { type: 'checkbox', id: `chunk-enabled-${chunk.id}`, checked: chunk.is_enabled !== false });
  enabled.addEventListener('change', async () => {
    showError(error, null);
    try {
      const stored = await api('PUT', path, { is_enabled: enabled.checked });
      onChanged(stored);
    } catch (err) {
      enabled.checked = !enabled.checked;
      showError(error, err);
    }
  });
  const area = h('textarea', { rows: '6', class: 'chunk-edit-text', 'aria-label': t('chunk.text'), maxlength: '200000' });
  const form = h(
    'form',
    {
      class: 'stack chunk-edit',
      hidden: true,
      onsubmit: async (event) => {
        event.preventDefault();
        if (!area.value.trim()) return;
        showError(error, null);
        try {
          const stored = await api('PUT', path, { content: area.value });
          textEl.textContent = stored.content;
          form.hidden = true;
          textEl.hidden = false;
          editButton.hidden = false;
          onChanged(stored);
          editButton.focus();
        } catch (err) {
          showError(error, err);
        }
      },
    },
    area,
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary small' }, t('save')), h('button', { type: 'button', class: 'small', onclick: () => { form.hidden = true; textEl.hidden = false; editButton.hidden = false; editButton.focus(); } }, t('cancel'))),
  );
  const editButton = h(
    'button',
    {
      type: 'button',
      class: 'small',
      dataset: { action: 'edit-chunk' },
      onclick: () => {
        area.value = textEl.textContent;
        form.hidden = false;
        textEl.hidden = true;
        editButton.hidden = true;
        area.focus();
      },
    },
    t('chunk.edit'),
  );
  const controls = h('div', { class: 'row chunk-controls' }, h('label', { class: 'check', for: `chunk-enabled-${chunk.id}` }, enabled, h('span', {}, t('chunk.searched'))), editButton);
  return { controls, form, error };
}
