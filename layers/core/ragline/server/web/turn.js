// One question and its answer: the state built from the turn's SSE frames, and its view.
//
// The state is plain JSON (kept in sessionStorage while the turn runs, so a reload resumes after the last
// frame received); the view is rebuilt from it at most once per animation frame.

import { copyText, count, formatDate, h, shortTime } from './dom.js';
import { imageHandles, storedThumbnail, zoomable, zoomableThumbnail } from './images.js';
import { citationClaims, renderMarkdown, safeUrl, stripPartialTag } from './markdown.js';
import { code, t } from './i18n.js';

// Citation tags in an answer's Markdown, as the server writes them.
const CITATION_TAG = /<(kb|web)\s+((?:[\w-]+="[^"]*"\s*)*)\/>/g;
// What is left of an answer that holds no words (a list marker, emphasis marks): shown as nothing.
const NO_WORDS = /^[\s\-*+>#_`•|.]*$/;

const TOOLS = {
  query_understand: ['tool.understand.running', 'tool.understand.done'],
  knowledge_search: ['tool.search.running', 'tool.search.done'],
  web_search: ['tool.web.running', 'tool.web.done'],
};

export function emptyState(init = {}) {
  return {
    sessionId: '',
    messageId: '',
    requestId: '',
    query: '',
    images: [], // the question's images: [{url (resource://images/… handle), caption}]
    userMessageId: '',
    streamUrl: '',
    lastSeq: null, // the id of the last frame applied: resume with Last-Event-ID: lastSeq
    resumedFrom: null,
    tools: [], // progress windows: {id, name, status: running|done|failed, args, data, content}
    memories: null,
    thinking: '',
    thinkingDone: false,
    reflection: '',
    references: null,
    answer: '',
    answerDone: false,
    fallback: false,
    modelId: '',
    truncated: false,
    error: null,
    stopped: null,
    completed: false,
    stored: false, // rebuilt from the stored messages, not from a stream
    feedback: '',
    feedbackComment: '',
    alternativeOf: '',
    askedAt: '', // ISO times: the question sent, the answer ended (the stored messages' created_at, updated_at)
    answeredAt: '',
    ...init,
  };
}

/** The state of a finished turn from its stored messages (GET /sessions/{sid}/messages). */
export function storedState(sessionId, user, assistant) {
  const reason = assistant ? assistant.stop_reason : '';
  return emptyState({
    sessionId,
    messageId: assistant ? assistant.id : '',
    requestId: (assistant || user || {}).request_id || '',
    query: user ? user.content : '',
    images: (user && user.images) || [],
    userMessageId: user ? user.id : '',
    references: assistant && assistant.knowledge_references.length ? assistant.knowledge_references : null,
    answer: assistant ? assistant.content : '',
    answerDone: true,
    thinkingDone: true,
    completed: Boolean(assistant && assistant.is_completed && !reason),
    stopped: reason === 'stopped' ? { message: t('stop.by_user'), reason: 'user_requested' } : null,
    error: reason === 'error' ? { message: t('answer.failed'), stage: '', type: '' } : null,
    stored: true,
    feedback: assistant ? assistant.feedback || '' : '',
    feedbackComment: assistant ? assistant.feedback_comment || '' : '',
    alternativeOf: assistant ? assistant.alternative_of || '' : '',
    askedAt: user ? user.created_at : '',
    answeredAt: assistant ? assistant.updated_at || assistant.created_at : '',
  });
}

export const isEnded = (state) => Boolean(state.completed || state.error || state.stopped);

/** A message's time: short on the page (the time of day today, else the date too), in full as its title. */
function showTime(el, iso) {
  el.hidden = !iso;
  if (!iso || el.dateTime === iso) return;
  el.dateTime = iso;
  el.textContent = shortTime(iso);
  el.title = formatDate(iso);
}

function toolWindow(tool, ended) {
  const [running, done] = TOOLS[tool.name] ? TOOLS[tool.name].map((key) => t(key)) : [t('tool.running', { name: tool.name }), tool.name];
  // A window still open when the turn ended (stopped, failed) stops spinning.
  const status = tool.status === 'running' && ended ? 'interrupted' : tool.status;
  const data = tool.data || {};
  let detail = '';
  if (status === 'interrupted') {
    detail = t('tool.interrupted');
  } else if (tool.status !== 'running') {
    if (tool.name === 'knowledge_search') {
      const parts = [count(data.count ?? 0, 'passage')];
      if (data.doc_count !== undefined) parts[0] = t('tool.search.from', { passages: parts[0], documents: count(data.doc_count, 'document') });
      if (data.web_count) parts.push(t('tool.search.web', { n: data.web_count }));
      if (data.candidate_count !== undefined) parts.push(count(data.candidate_count, 'candidate'));
      if (data.search_source) parts.push(code('search_source', String(data.search_source)));
      detail = parts.join(' · ');
      if (data.error) detail += ` — ${data.error}`;
    } else if (tool.name === 'query_understand') {
      detail = [data.rewrite_query ? `“${data.rewrite_query}”` : '', data.intent ? code('intent', data.intent) : ''].filter(Boolean).join(' · ');
    } else {
      detail = tool.content || '';
    }
  } else if (tool.args && tool.args.query) {
    detail = `“${tool.args.query}”`;
  }
  return h(
    'div',
    { class: `tool ${status}`, dataset: { tool: tool.name } },
    h('span', { class: 'tool-icon', 'aria-hidden': 'true' }),
    h('span', { class: 'tool-label' }, status === 'running' ? running : done),
    detail ? h('span', { class: 'tool-detail' }, detail) : null,
  );
}

export class Turn {
  /**
   * options: onCite(citation) opens the source viewer; onTitle(title, sessionId); onRender(); onModel(id);
   * the answer actions: onRegenerate(turn), onEdit(turn, query), onFeedback(turn, rating, comment) → Promise,
   * onFork(turn), onRewind(turn).
   */
  constructor(state, options = {}) {
    this.state = emptyState(state);
    this.options = options;
    this.status = '';
    this.marks = {};
    this.renderedAnswer = null;
    this.renderedReferences = null;
    this.renderedCited = '';
    this.numbers = new Map();
    this.cited = new Map();
    this.claims = [];
    this.userToggled = false;
    this.referencesOpen = false;
    this.copied = '';
    this.busy = false;
    this.pending = false;
    this.previews = []; // blob: URLs of the files just attached, shown until the stored images are known
    this.renderedImages = '';
    this.build();
    this.render();
  }

  build() {
    this.userText = h('div', { class: 'user-text' });
    this.editButton = h(
      'button',
      { type: 'button', class: 'ghost small edit-question', onclick: () => this.startEdit() },
      t('edit'),
    );
    this.editArea = h('textarea', { rows: '3', class: 'edit-area', 'aria-label': t('edit.question') });
    this.editForm = h(
      'form',
      {
        class: 'edit-form',
        hidden: true,
        onsubmit: (event) => {
          event.preventDefault();
          const query = this.editArea.value.trim();
          if (!query) return;
          this.editForm.hidden = true;
          this.userText.hidden = false;
          this.options.onEdit?.(this, query);
        },
      },
      this.editArea,
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'submit', class: 'primary small' }, t('send')),
        h('button', { type: 'button', class: 'small', onclick: () => this.cancelEdit() }, t('cancel')),
      ),
    );
    this.userImages = h('div', { class: 'user-images', role: 'group', 'aria-label': t('question.images'), hidden: true });
    this.askedTime = h('time', { class: 'msg-time', hidden: true });
    this.answeredTime = h('time', { class: 'msg-time', hidden: true });
    this.userEl = h('div', { class: 'msg user' }, this.userImages, this.userText, this.editForm, h('div', { class: 'msg-foot' }, this.askedTime, this.editButton));
    this.progressEl = h('div', { class: 'progress' });
    this.reasoningSummary = h('summary', { onclick: () => (this.userToggled = true) }, t('reasoning'));
    this.reasoningText = h('div', { class: 'reasoning-text' });
    this.reasoningEl = h('details', { class: 'reasoning', hidden: true }, this.reasoningSummary, this.reasoningText);
    this.referencesEl = h('section', { class: 'references', hidden: true, 'aria-label': t('references') });
    this.badgesEl = h('div', { class: 'badges' });
    this.answerEl = h('div', { class: 'answer markdown' });
    this.truncatedEl = h(
      'div',
      { class: 'notice truncated', hidden: true },
      t('answer.truncated'),
    );
    this.errorEl = h('div', { class: 'notice error', role: 'alert', hidden: true });
    this.stoppedEl = h('div', { class: 'notice stopped', hidden: true });
    this.statusEl = h('div', { class: 'status', 'aria-live': 'polite' });
    this.actionsEl = h('div', { class: 'turn-actions', role: 'group', 'aria-label': t('answer.actions'), hidden: true });
    this.feedbackForm = this.buildFeedbackForm();
    this.assistantEl = h(
      'div',
      { class: 'msg assistant' },
      this.progressEl,
      this.reasoningEl,
      this.referencesEl,
      this.badgesEl,
      this.answerEl,
      this.truncatedEl,
      this.errorEl,
      this.stoppedEl,
      this.statusEl,
      (this.answerFoot = h('div', { class: 'msg-foot' }, this.answeredTime, this.actionsEl)),
      this.feedbackForm,
    );
    this.el = h('article', { class: 'turn' }, this.userEl, this.assistantEl);
    this.isLast = false;
    this.el.raglineTurn = this; // for tests and debugging: the state behind the view
  }

  /** Applies one SSE frame (a StreamResponse) received with id `seq`. */
  apply(frame, seq) {
    const s = this.state;
    const data = frame.data || {};
    if (seq !== null && seq !== undefined) s.lastSeq = seq;
    if (!s.messageId && frame.assistant_message_id) s.messageId = frame.assistant_message_id;
    if (!s.requestId && frame.id) s.requestId = frame.id;
    switch (frame.response_type) {
      case 'agent_query':
        if (!s.query) s.query = frame.content || '';
        break;
      case 'tool_call':
      case 'tool_result': {
        const id = data.tool_call_id || data.tool_name || 'tool';
        let tool = s.tools.find((t) => t.id === id);
        if (!tool) {
          tool = { id, name: data.tool_name || 'tool', status: 'running', args: {}, data: null, content: '' };
          s.tools.push(tool);
        }
        if (frame.response_type === 'tool_call') {
          tool.args = data.arguments || {};
        } else {
          tool.status = data.success === false || data.error ? 'failed' : 'done';
          tool.data = data;
          tool.content = frame.content || '';
        }
        break;
      }
      case 'memory_recalled':
        s.memories = data.memories || [];
        break;
      case 'references':
        s.references = frame.knowledge_references || [];
        break;
      case 'thinking':
        s.thinking += frame.content || '';
        if (frame.done) s.thinkingDone = true;
        break;
      case 'reflection':
        s.reflection += frame.content || '';
        break;
      case 'answer':
        s.answer += frame.content || '';
        if (frame.content) s.thinkingDone = true;
        if (data.is_fallback) s.fallback = true;
        if (data.model_id) s.modelId = data.model_id;
        if (frame.done) {
          s.answerDone = true;
          if (data.truncated) s.truncated = true;
        }
        break;
      case 'session_title':
        this.options.onTitle?.(frame.content || '', data.session_id || frame.session_id || s.sessionId);
        break;
      case 'error':
        s.error = { message: frame.content || t('answer.failed'), stage: data.stage || '', type: data.error_type || '' };
        break;
      case 'stop':
        s.stopped = { message: frame.content || t('stopped'), reason: data.reason || '' };
        break;
      case 'complete':
        s.completed = true;
        break;
      default:
        break;
    }
    this.schedule();
  }

  /** A failure outside the stream (the stream route answered 404, the network is gone): shown in place. */
  fail(error) {
    this.state.error = { message: error.message || String(error), stage: '', type: error.code || '' };
    this.schedule();
  }

  setStatus(text) {
    this.status = text;
    this.schedule();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    const run = () => {
      if (this.pending) this.render();
    };
    requestAnimationFrame(run);
    setTimeout(run, 100); // rAF does not run in a background tab
  }

  phase() {
    const s = this.state;
    if (s.error) return 'error';
    if (s.stopped) return 'stopped';
    if (s.completed) return 'complete';
    return s.stored ? 'incomplete' : 'streaming';
  }

  mark(name) {
    if (this.marks[name] !== undefined) return;
    this.marks[name] = performance.now();
    this.el.dataset[`${name}At`] = this.marks[name].toFixed(1);
  }

  render() {
    this.pending = false;
    const s = this.state;
    const phase = this.phase();
    this.el.dataset.messageId = s.messageId;
    this.el.dataset.state = phase;
    if (s.resumedFrom !== null && s.resumedFrom !== undefined) this.el.dataset.resumedFrom = String(s.resumedFrom);
    if (this.userText.textContent !== s.query) this.userText.textContent = s.query;
    this.renderImages();
    // A question may be its images alone: the bubble shows them without text.
    this.userEl.hidden = !s.query && this.userImages.hidden;
    this.editButton.hidden = phase === 'streaming' || !this.editForm.hidden || !this.options.onEdit;

    const windows = s.tools.map((tool) => toolWindow(tool, phase !== 'streaming'));
    if (s.memories && s.memories.length) {
      windows.push(
        h(
          'div',
          { class: 'tool done', dataset: { tool: 'memory' } },
          h('span', { class: 'tool-icon', 'aria-hidden': 'true' }),
          h('span', { class: 'tool-label' }, t('memory.recalled', { memories: count(s.memories.length, 'memory') })),
          h('span', { class: 'tool-detail' }, s.memories.map((m) => m.content).join(' · ')),
        ),
      );
    }
    this.progressEl.replaceChildren(...windows);
    this.progressEl.hidden = windows.length === 0;

    const reasoning = s.thinking + (s.reflection ? `\n\n${s.reflection}` : '');
    this.reasoningEl.hidden = !reasoning;
    this.reasoningText.textContent = reasoning;
    this.reasoningSummary.textContent = s.thinkingDone || phase !== 'streaming' ? t('reasoning') : t('reasoning.running');
    if (!this.userToggled) this.reasoningEl.open = Boolean(reasoning) && !s.thinkingDone && phase === 'streaming';

    if (s.references && s.references.length) {
      if (this.renderedReferences !== s.references) this.renderReferences();
      this.referencesEl.hidden = false;
      this.mark('references');
    } else {
      this.referencesEl.hidden = true;
    }

    const badges = [];
    if (s.fallback) {
      badges.push(
        h(
          'span',
          { class: 'badge fallback', title: t('badge.fallback.title') },
          t('badge.fallback'),
        ),
      );
    }
    // A fallback ("the knowledge base does not say") quotes nothing: one badge says what it is.
    if (s.modelId === 'local:extractive' && !s.fallback) {
      badges.push(
        h(
          'span',
          { class: 'badge quoted', title: t('badge.quoted.title') },
          t('badge.quoted'),
        ),
      );
    }
    this.badgesEl.replaceChildren(...badges);
    this.badgesEl.hidden = badges.length === 0;

    const text = s.answerDone || phase !== 'streaming' ? s.answer : stripPartialTag(s.answer);
    if (text !== this.renderedAnswer) {
      this.numbers = new Map();
      this.cited = new Map();
      this.claims = citationClaims(text);
      this.answerEl.replaceChildren(renderMarkdown(text, { renderCitation: (c) => this.citation(c) }));
      this.renderedAnswer = text;
      const citedKey = [...this.cited].map(([key, list]) => `${key}:${list.map((e) => e.chunkId).join(',')}`).join('|');
      if (citedKey !== this.renderedCited && s.references && s.references.length) {
        this.renderedCited = citedKey;
        this.renderReferences();
      }
    }
    if (text.trim()) this.mark('answer');
    // An answer stopped before its first words (a lone list marker) shows as nothing, not as an empty "•".
    this.answerEl.hidden = NO_WORDS.test(text) && phase !== 'streaming';

    this.truncatedEl.hidden = !s.truncated;
    this.errorEl.hidden = !s.error;
    if (s.error) {
      const where = [s.error.stage, s.error.type].filter(Boolean).join(', ');
      const parts = [h('strong', {}, t('error')), ' ', h('span', { translate: 'no' }, s.error.message)];
      if (where) parts.push(h('span', { class: 'muted' }, ` (${where})`));
      this.errorEl.replaceChildren(...parts);
    }
    this.stoppedEl.hidden = !s.stopped;
    if (s.stopped) {
      // The server's words, but for a stop by the reader, which the page says in its language.
      const message = s.stopped.reason === 'user_requested' ? t('stop.by_user') : s.stopped.message;
      this.stoppedEl.textContent = t('stop.notice', { message });
    }
    this.statusEl.textContent = phase === 'streaming' ? this.status || t('status.answering') : '';
    this.statusEl.hidden = phase !== 'streaming';
    if (s.modelId && s.modelId !== this.reportedModel) {
      this.reportedModel = s.modelId;
      this.options.onModel?.(s.modelId);
    }
    // The answer's time once it ended (live: when its last frame came).
    if (phase !== 'streaming' && !s.answeredAt && !s.stored) s.answeredAt = new Date().toISOString();
    showTime(this.askedTime, s.askedAt);
    showTime(this.answeredTime, phase === 'streaming' ? '' : s.answeredAt);
    this.renderActions(phase);
    this.answerFoot.hidden = this.answeredTime.hidden && this.actionsEl.hidden;
    this.options.onRender?.(this);
  }

  /** The question's images: the stored ones by their handles, else the previews of the files just sent. */
  renderImages() {
    const stored = this.state.images || [];
    const key = stored.length ? stored.map((image) => image.url).join('|') : this.previews.join('|');
    if (key === this.renderedImages) return;
    this.renderedImages = key;
    const label = (i, caption) => t('question.image', { n: i + 1 }) + (caption ? `: ${caption}` : '');
    const thumbs = stored.length
      ? stored.map((image, i) => zoomableThumbnail(image.url, label(i, image.caption)))
      : this.previews.map((src, i) => zoomable(h('img', { class: 'thumb', src, alt: label(i, ''), dataset: { state: 'preview' } })));
    this.userImages.replaceChildren(...thumbs);
    this.userImages.hidden = thumbs.length === 0;
    if (stored.length && this.previews.length) {
      // The stored images replace the files' previews, which are let go.
      for (const src of this.previews) URL.revokeObjectURL(src);
      this.previews = [];
    }
  }

  /** The reference a chunk id belongs to: the passage itself, or one merge built from it. */
  referenceFor(chunkId) {
    const refs = this.state.references || [];
    return refs.find((r) => r.id === chunkId) || refs.find((r) => (r.sub_chunk_id || []).includes(chunkId)) || null;
  }

  /** Citations are numbered per document (one reference card each), in the order the answer cites them. */
  documentKey(chunkId, doc) {
    const ref = this.referenceFor(chunkId);
    if (ref) return ref.url ? `web:${ref.url}` : `doc:${ref.knowledge_id || ref.id}`;
    const same = (this.state.references || []).find((r) => doc && r.knowledge_title === doc && r.knowledge_id);
    return same ? `doc:${same.knowledge_id}` : `title:${doc}`;
  }

  numberFor(key) {
    if (!this.numbers.has(key)) this.numbers.set(key, this.numbers.size + 1);
    return this.numbers.get(key);
  }

  openChunk(chunkId, doc, kbId, claim = '') {
    const reference = this.referenceFor(chunkId);
    this.options.onCite?.({ chunkId, doc: doc || (reference && reference.knowledge_title) || '', kbId, reference, claim });
  }

  citation(c) {
    const claim = this.claims[c.index] || '';
    if (c.kind === 'web') {
      const href = safeUrl(c.url);
      if (!href || href.startsWith('mailto:')) return null;
      const label = c.title || new URL(href).hostname;
      return h(
        'a',
        { class: 'cite web', href, target: '_blank', rel: 'noopener noreferrer nofollow', title: c.url },
        h('span', { class: 'cite-n' }, String(this.numberFor(`web:${href}`))),
        h('span', { class: 'cite-label' }, label),
      );
    }
    if (!c.chunkId) return null;
    const key = this.documentKey(c.chunkId, c.doc);
    const cited = this.cited.get(key) || [];
    if (!cited.some((entry) => entry.chunkId === c.chunkId)) cited.push({ chunkId: c.chunkId, claim, doc: c.doc });
    this.cited.set(key, cited);
    return h(
      'button',
      {
        type: 'button',
        class: 'cite',
        title: t('cite.title', { doc: c.doc || t('source') }),
        dataset: { chunkId: c.chunkId, kbId: c.kbId },
        onclick: () => this.openChunk(c.chunkId, c.doc, c.kbId, claim),
      },
      h('span', { class: 'cite-n' }, String(this.numberFor(key))),
      h('span', { class: 'cite-label' }, c.doc || t('source.chip')),
    );
  }

  /** The documents of the references, in retrieval order: {key, title, kind, refs, url}. */
  documents() {
    const documents = new Map();
    for (const ref of this.state.references || []) {
      const key = ref.url ? `web:${ref.url}` : `doc:${ref.knowledge_id || ref.id}`;
      if (!documents.has(key)) {
        const kind = ref.url ? 'web' : (ref.knowledge_filename || '').split('.').pop().toLowerCase();
        documents.set(key, { key, title: ref.knowledge_title || ref.knowledge_filename || t('untitled'), kind, url: ref.url, refs: [] });
      }
      documents.get(key).refs.push(ref);
    }
    return [...documents.values()];
  }

  passageButton(ref, title, entry) {
    const page = ref && ref.chunk_metadata && ref.chunk_metadata.page;
    const where = [ref && ref.header, page ? t('ref.page', { page }) : '', ref && typeof ref.score === 'number' ? t('ref.score', { score: ref.score.toFixed(2) }) : '']
      .filter(Boolean)
      .join(' · ');
    const chunkId = entry ? entry.chunkId : ref.id;
    const snippet = (entry && entry.claim) || (ref ? ref.content : '') || '';
    return h(
      'button',
      {
        type: 'button',
        class: `ref${entry ? ' cited' : ''}`,
        dataset: { chunkId },
        title: entry ? t('ref.cited') : t('ref.retrieved'),
        onclick: () => this.openChunk(chunkId, title, ref ? ref.knowledge_base_id : '', entry ? entry.claim : ''),
      },
      where ? h('span', { class: 'ref-where' }, where) : null,
      this.referenceImages(ref, title),
      h('span', { class: 'ref-snippet' }, snippet.replace(/\s+/g, ' ').slice(0, 200)),
    );
  }

  /** Thumbnails of the images an image passage (OCR text of a picture) was read from; null for text. */
  referenceImages(ref, title) {
    if (!ref || (ref.chunk_type !== 'image_ocr' && !ref.image_info)) return null;
    const handles = imageHandles(ref).slice(0, 3);
    if (!handles.length) return null;
    return h(
      'span',
      { class: 'ref-images' },
      handles.map((handle, i) => storedThumbnail(handle, t('image.from', { n: i + 1, title }))),
    );
  }

  renderReferences() {
    const refs = this.state.references || [];
    this.renderedReferences = refs;
    const documents = this.documents();
    // Cited documents first, by their citation number; the others after, in retrieval order.
    const numbered = (doc) => (this.numbers.has(doc.key) ? this.numbers.get(doc.key) : Infinity);
    const ordered = documents.map((doc, i) => [doc, i]).sort((a, b) => numbered(a[0]) - numbered(b[0]) || a[1] - b[1]);
    const items = ordered.map(([doc]) => {
      const cited = this.cited.get(doc.key) || [];
      const number = this.numbers.get(doc.key);
      const webUrl = doc.url ? safeUrl(doc.url) : '';
      const head = h(
        'div',
        { class: 'ref-card-head' },
        h('span', { class: `ref-n${number ? '' : ' uncited'}`, title: number ? t('ref.is_cited') : t('ref.not_cited') }, number ? String(number) : '·'),
        webUrl && !webUrl.startsWith('mailto:')
          ? h('a', { class: 'ref-title', href: webUrl, target: '_blank', rel: 'noopener noreferrer nofollow' }, doc.title)
          : h('span', { class: 'ref-title' }, doc.title),
        doc.kind && doc.kind !== 'web' ? h('span', { class: 'ref-kind' }, doc.kind.toUpperCase()) : null,
      );
      // The cited passages (in citation order), then the retrieved ones nothing cited.
      const entries = cited.map((entry) => this.passageButton(this.referenceFor(entry.chunkId), doc.title, entry));
      const citedRefs = new Set(cited.map((entry) => (this.referenceFor(entry.chunkId) || {}).id));
      for (const ref of doc.refs) {
        if (!citedRefs.has(ref.id) && !doc.url) entries.push(this.passageButton(ref, doc.title, null));
      }
      return h(
        'li',
        { class: `ref-card${number ? ' cited' : ''}`, dataset: { documentKey: doc.key } },
        head,
        entries.length ? h('ul', { class: 'ref-chunks' }, entries.map((entry) => h('li', {}, entry))) : null,
      );
    });
    const citedCount = ordered.filter(([doc]) => this.numbers.has(doc.key)).length;
    const heading = citedCount
      ? t('references.cited', { n: citedCount, documents: count(documents.length, 'document') })
      : t('references.count', { documents: count(documents.length, 'document') });
    // Collapsed by default: the cited documents' names stand in for the cards until the reader opens them.
    const citedNames = ordered.filter(([doc]) => this.numbers.has(doc.key)).map(([doc]) => doc.title);
    const listId = `refs-${this.state.messageId || Math.random().toString(36).slice(2)}`;
    const toggle = h(
      'button',
      {
        type: 'button',
        class: 'ref-toggle',
        'aria-expanded': String(this.referencesOpen),
        'aria-controls': listId,
        onclick: () => {
          this.referencesOpen = !this.referencesOpen;
          this.renderReferences();
        },
      },
      heading,
    );
    this.referencesEl.dataset.open = String(this.referencesOpen);
    // One landmark per answer: each is named after its question, so a screen reader's list tells them apart.
    const question = (this.state.query || '').replace(/\s+/g, ' ').trim();
    this.referencesEl.setAttribute('aria-label', question ? t('references.of', { question: question.slice(0, 60) }) : t('references'));
    this.referencesEl.replaceChildren(
      ...[
        h('h2', { class: 'ref-heading' }, toggle),
      citedNames.length > 0 && !this.referencesOpen
        ? h('p', { class: 'ref-summary' }, citedNames.map((name, i) => h('span', { class: 'ref-summary-item' }, h('span', { class: 'ref-n' }, String(i + 1)), name)))
        : null,
        h('ol', { class: 'reference-list', id: listId, hidden: !this.referencesOpen }, items),
      ].filter(Boolean),
    );
  }

  // Answer actions ------------------------------------------------------------------------------------------
  renderActions(phase) {
    const s = this.state;
    const ended = phase !== 'streaming' && Boolean(s.messageId);
    this.actionsEl.hidden = !ended;
    if (!ended) return;
    const key = [s.feedback, this.isLast, Boolean(s.answer), this.copied, this.busy].join('|');
    if (key === this.renderedActions) return;
    this.renderedActions = key;
    const button = (label, action, attrs = {}) =>
      h('button', { type: 'button', class: `ghost small action-${action}`, dataset: { action }, ...attrs }, label);
    const items = [];
    if (s.answer) {
      items.push(
        button(this.copied === 'markdown' ? t('copied') : t('copy'), 'copy', {
          title: t('copy.markdown'),
          onclick: () => this.copy('markdown'),
        }),
        button(this.copied === 'plain' ? t('copied') : t('copy.text'), 'copy-plain', {
          title: t('copy.plain'),
          onclick: () => this.copy('plain'),
        }),
      );
    }
    if (this.isLast && this.options.onRegenerate) {
      items.push(button(t('regenerate'), 'regenerate', { disabled: this.busy, onclick: () => this.options.onRegenerate(this) }));
    }
    items.push(
      button(t('feedback.up'), 'up', {
        'aria-label': t('feedback.up.label'),
        'aria-pressed': String(s.feedback === 'up'),
        onclick: () => this.rate('up'),
      }),
      button(t('feedback.down'), 'down', {
        'aria-label': t('feedback.down.label'),
        'aria-pressed': String(s.feedback === 'down'),
        onclick: () => this.rate('down'),
      }),
    );
    if (this.options.onFork) {
      items.push(button(t('fork'), 'fork', { title: t('fork.title'), onclick: () => this.options.onFork(this) }));
    }
    if (!this.isLast && this.options.onRewind) {
      items.push(button(t('rewind'), 'rewind', { title: t('rewind.title'), onclick: () => this.options.onRewind(this) }));
    }
    this.actionsEl.replaceChildren(...items);
  }

  buildFeedbackForm() {
    this.feedbackComment = h('textarea', { rows: '2', maxlength: '2000', class: 'feedback-comment', 'aria-label': t('feedback.comment'), placeholder: t('feedback.placeholder') });
    this.feedbackStatus = h('span', { class: 'muted feedback-status', role: 'status' });
    return h(
      'form',
      {
        class: 'feedback-form',
        hidden: true,
        onsubmit: async (event) => {
          event.preventDefault();
          await this.sendFeedback(this.state.feedback, this.feedbackComment.value);
          if (!this.feedbackError) this.feedbackForm.hidden = true;
        },
      },
      this.feedbackComment,
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'submit', class: 'small primary' }, t('feedback.save')),
        h('button', { type: 'button', class: 'small', onclick: () => (this.feedbackForm.hidden = true) }, t('close')),
        this.feedbackStatus,
      ),
    );
  }

  async rate(rating) {
    const next = this.state.feedback === rating ? 'none' : rating;
    await this.sendFeedback(next, next === 'none' ? '' : this.state.feedbackComment);
    this.feedbackComment.value = this.state.feedbackComment;
    this.feedbackForm.hidden = next === 'none' || Boolean(this.feedbackError);
    if (!this.feedbackForm.hidden) this.feedbackComment.focus();
  }

  async sendFeedback(rating, comment) {
    this.feedbackError = null;
    try {
      const message = await this.options.onFeedback(this, rating, comment);
      this.state.feedback = message.feedback;
      this.state.feedbackComment = message.feedback_comment;
      this.feedbackStatus.textContent = message.feedback ? t('saved') : '';
    } catch (err) {
      this.feedbackError = err;
      this.feedbackStatus.textContent = err.message;
      this.feedbackForm.hidden = false;
    }
    this.el.dataset.feedback = this.state.feedback;
    this.schedule();
  }

  /** The answer with citations as [n] and the references listed under it (Markdown), or as plain text. */
  exportText(kind) {
    const numbers = new Map();
    const titles = [];
    const markdown = this.state.answer.replace(CITATION_TAG, (tag, tagKind, attrs) => {
      const title = (/(?:doc|title)="([^"]*)"/.exec(attrs) || [])[1] || (/url="([^"]*)"/.exec(attrs) || [])[1] || t('source.chip');
      if (!numbers.has(title)) {
        numbers.set(title, numbers.size + 1);
        titles.push(title);
      }
      return `[${numbers.get(title)}]`;
    });
    if (kind === 'markdown') {
      const sources = titles.map((title, i) => `[${i + 1}] ${title}`).join('\n');
      return sources ? `${markdown.trim()}\n\n${sources}\n` : `${markdown.trim()}\n`;
    }
    const clone = this.answerEl.cloneNode(true);
    for (const chip of clone.querySelectorAll('.cite')) {
      const n = chip.querySelector('.cite-n');
      chip.replaceWith(`[${n ? n.textContent : ''}]`);
    }
    // innerText needs a rendered element: measure the clone off screen.
    clone.classList.add('offscreen');
    document.body.append(clone);
    const text = clone.innerText.replace(/\n{3,}/g, '\n\n').trim();
    clone.remove();
    const sources = titles.map((title, i) => `[${i + 1}] ${title}`).join('\n');
    return sources ? `${text}\n\n${sources}\n` : `${text}\n`;
  }

  async copy(kind) {
    const text = this.exportText(kind);
    this.el.dataset.copied = kind;
    this.lastCopied = text;
    await copyText(text);
    this.copied = kind;
    this.schedule();
    setTimeout(() => {
      this.copied = '';
      this.schedule();
    }, 2000);
  }

  startEdit() {
    this.editArea.value = this.state.query;
    this.editForm.hidden = false;
    this.userText.hidden = true;
    this.editButton.hidden = true;
    this.editArea.focus();
  }

  cancelEdit() {
    this.editForm.hidden = true;
    this.userText.hidden = false;
    this.schedule();
  }

  setLast(isLast) {
    if (this.isLast === isLast) return;
    this.isLast = isLast;
    this.schedule();
  }
}
