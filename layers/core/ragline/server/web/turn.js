// One question and its answer: the state built from the turn's SSE frames, and its view.
//
// The state is plain JSON (kept in sessionStorage while the turn runs, so a reload resumes after the last
// frame received); the view is rebuilt from it at most once per animation frame.

import { count, h } from './dom.js';
import { renderMarkdown, safeUrl, stripPartialTag } from './markdown.js';

const TOOLS = {
  query_understand: ['Understanding the question…', 'Question understood'],
  knowledge_search: ['Searching the knowledge base…', 'Knowledge base searched'],
  web_search: ['Searching the web…', 'Web searched'],
};

export function emptyState(init = {}) {
  return {
    sessionId: '',
    messageId: '',
    requestId: '',
    query: '',
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
    truncated: false,
    error: null,
    stopped: null,
    completed: false,
    stored: false, // rebuilt from the stored messages, not from a stream
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
    references: assistant && assistant.knowledge_references.length ? assistant.knowledge_references : null,
    answer: assistant ? assistant.content : '',
    answerDone: true,
    thinkingDone: true,
    completed: Boolean(assistant && assistant.is_completed && !reason),
    stopped: reason === 'stopped' ? { message: 'Generation stopped by user', reason: 'user_requested' } : null,
    error: reason === 'error' ? { message: 'The answer failed.', stage: '', type: '' } : null,
    stored: true,
  });
}

export const isEnded = (state) => Boolean(state.completed || state.error || state.stopped);

function toolWindow(tool, ended) {
  const [running, done] = TOOLS[tool.name] || [`Running ${tool.name}…`, tool.name];
  // A window still open when the turn ended (stopped, failed) stops spinning.
  const status = tool.status === 'running' && ended ? 'interrupted' : tool.status;
  const data = tool.data || {};
  let detail = '';
  if (status === 'interrupted') {
    detail = 'interrupted';
  } else if (tool.status !== 'running') {
    if (tool.name === 'knowledge_search') {
      const parts = [count(data.count ?? 0, 'passage')];
      if (data.doc_count !== undefined) parts[0] += ` from ${count(data.doc_count, 'document')}`;
      if (data.web_count) parts.push(`${data.web_count} from the web`);
      if (data.candidate_count !== undefined) parts.push(count(data.candidate_count, 'candidate'));
      if (data.search_source) parts.push(String(data.search_source));
      detail = parts.join(' · ');
      if (data.error) detail += ` — ${data.error}`;
    } else if (tool.name === 'query_understand') {
      detail = [data.rewrite_query ? `“${data.rewrite_query}”` : '', data.intent || ''].filter(Boolean).join(' · ');
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
  /** options: onCite(citation) opens the source viewer; onTitle(title, sessionId); onRender(). */
  constructor(state, options = {}) {
    this.state = emptyState(state);
    this.options = options;
    this.status = '';
    this.marks = {};
    this.renderedAnswer = null;
    this.renderedReferences = null;
    this.userToggled = false;
    this.pending = false;
    this.build();
    this.render();
  }

  build() {
    this.userEl = h('div', { class: 'msg user' });
    this.progressEl = h('div', { class: 'progress' });
    this.reasoningSummary = h('summary', { onclick: () => (this.userToggled = true) }, 'Reasoning');
    this.reasoningText = h('div', { class: 'reasoning-text' });
    this.reasoningEl = h('details', { class: 'reasoning', hidden: true }, this.reasoningSummary, this.reasoningText);
    this.referencesEl = h('section', { class: 'references', hidden: true, 'aria-label': 'References' });
    this.badgesEl = h('div', { class: 'badges' });
    this.answerEl = h('div', { class: 'answer markdown' });
    this.truncatedEl = h(
      'div',
      { class: 'notice truncated', hidden: true },
      'The answer reached the model’s output limit and may be cut short.',
    );
    this.errorEl = h('div', { class: 'notice error', role: 'alert', hidden: true });
    this.stoppedEl = h('div', { class: 'notice stopped', hidden: true });
    this.statusEl = h('div', { class: 'status', 'aria-live': 'polite' });
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
    );
    this.el = h('article', { class: 'turn' }, this.userEl, this.assistantEl);
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
        if (frame.done) {
          s.answerDone = true;
          if (data.truncated) s.truncated = true;
        }
        break;
      case 'session_title':
        this.options.onTitle?.(frame.content || '', data.session_id || frame.session_id || s.sessionId);
        break;
      case 'error':
        s.error = { message: frame.content || 'The answer failed.', stage: data.stage || '', type: data.error_type || '' };
        break;
      case 'stop':
        s.stopped = { message: frame.content || 'Stopped', reason: data.reason || '' };
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
    this.userEl.textContent = s.query;
    this.userEl.hidden = !s.query;

    const windows = s.tools.map((tool) => toolWindow(tool, phase !== 'streaming'));
    if (s.memories && s.memories.length) {
      windows.push(
        h(
          'div',
          { class: 'tool done', dataset: { tool: 'memory' } },
          h('span', { class: 'tool-icon', 'aria-hidden': 'true' }),
          h('span', { class: 'tool-label' }, `Recalled ${count(s.memories.length, 'memory').replace(/ys$/, 'ies')}`),
          h('span', { class: 'tool-detail' }, s.memories.map((m) => m.content).join(' · ')),
        ),
      );
    }
    this.progressEl.replaceChildren(...windows);
    this.progressEl.hidden = windows.length === 0;

    const reasoning = s.thinking + (s.reflection ? `\n\n${s.reflection}` : '');
    this.reasoningEl.hidden = !reasoning;
    this.reasoningText.textContent = reasoning;
    this.reasoningSummary.textContent = s.thinkingDone || phase !== 'streaming' ? 'Reasoning' : 'Reasoning…';
    if (!this.userToggled) this.reasoningEl.open = Boolean(reasoning) && !s.thinkingDone && phase === 'streaming';

    if (s.references && s.references.length) {
      if (this.renderedReferences !== s.references) this.renderReferences();
      this.referencesEl.hidden = false;
      this.mark('references');
    } else {
      this.referencesEl.hidden = true;
    }

    this.badgesEl.replaceChildren(
      ...(s.fallback
        ? [
            h(
              'span',
              { class: 'badge fallback', title: 'Nothing in the knowledge bases matched; this is the fallback answer.' },
              'Fallback answer',
            ),
          ]
        : []),
    );
    this.badgesEl.hidden = !s.fallback;

    const text = s.answerDone || phase !== 'streaming' ? s.answer : stripPartialTag(s.answer);
    if (text !== this.renderedAnswer) {
      this.numbers = new Map();
      this.answerEl.replaceChildren(renderMarkdown(text, { renderCitation: (c) => this.citation(c) }));
      this.renderedAnswer = text;
    }
    if (text.trim()) this.mark('answer');
    this.answerEl.hidden = !text && phase !== 'streaming';

    this.truncatedEl.hidden = !s.truncated;
    this.errorEl.hidden = !s.error;
    if (s.error) {
      const where = [s.error.stage, s.error.type].filter(Boolean).join(', ');
      const parts = [h('strong', {}, 'Error'), ` ${s.error.message}`];
      if (where) parts.push(h('span', { class: 'muted' }, ` (${where})`));
      this.errorEl.replaceChildren(...parts);
    }
    this.stoppedEl.hidden = !s.stopped;
    if (s.stopped) this.stoppedEl.textContent = `■ Stopped — ${s.stopped.message}`;
    this.statusEl.textContent = phase === 'streaming' ? this.status || 'Answering…' : '';
    this.statusEl.hidden = phase !== 'streaming';
    this.options.onRender?.(this);
  }

  referenceIndex(chunkId) {
    return (this.state.references || []).findIndex((r) => r.id === chunkId);
  }

  numberFor(key, chunkId) {
    const index = chunkId ? this.referenceIndex(chunkId) : -1;
    if (index >= 0) return index + 1;
    if (!this.numbers.has(key)) {
      const base = (this.state.references || []).length;
      this.numbers.set(key, base + this.numbers.size + 1);
    }
    return this.numbers.get(key);
  }

  openChunk(chunkId, doc, kbId) {
    const reference = (this.state.references || [])[this.referenceIndex(chunkId)] || null;
    this.options.onCite?.({ chunkId, doc: doc || (reference && reference.knowledge_title) || '', kbId, reference });
  }

  citation(c) {
    if (c.kind === 'web') {
      const href = safeUrl(c.url);
      if (!href || href.startsWith('mailto:')) return null;
      const label = c.title || new URL(href).hostname;
      return h(
        'a',
        { class: 'cite web', href, target: '_blank', rel: 'noopener noreferrer nofollow', title: c.url },
        h('span', { class: 'cite-n' }, String(this.numberFor(href, ''))),
        h('span', { class: 'cite-label' }, label),
      );
    }
    if (!c.chunkId) return null;
    return h(
      'button',
      {
        type: 'button',
        class: 'cite',
        title: `${c.doc || 'Source'} — open the cited passage`,
        dataset: { chunkId: c.chunkId, kbId: c.kbId },
        onclick: () => this.openChunk(c.chunkId, c.doc, c.kbId),
      },
      h('span', { class: 'cite-n' }, String(this.numberFor(c.chunkId, c.chunkId))),
      h('span', { class: 'cite-label' }, c.doc || 'source'),
    );
  }

  renderReferences() {
    const refs = this.state.references || [];
    this.renderedReferences = refs;
    const items = refs.map((ref, index) => {
      const title = ref.knowledge_title || ref.knowledge_filename || 'Untitled';
      const snippet = (ref.content || '').replace(/\s+/g, ' ').slice(0, 180);
      const body = [
        h('span', { class: 'ref-n' }, String(index + 1)),
        h(
          'span',
          { class: 'ref-body' },
          h('span', { class: 'ref-title' }, title),
          ref.header ? h('span', { class: 'ref-header' }, ref.header) : null,
          h('span', { class: 'ref-snippet' }, snippet),
        ),
      ];
      const webUrl = ref.url ? safeUrl(ref.url) : '';
      if (webUrl && !webUrl.startsWith('mailto:')) {
        return h('li', {}, h('a', { class: 'ref', href: webUrl, target: '_blank', rel: 'noopener noreferrer nofollow' }, body));
      }
      return h(
        'li',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'ref',
            dataset: { chunkId: ref.id },
            onclick: () => this.openChunk(ref.id, title, ref.knowledge_base_id),
          },
          body,
        ),
      );
    });
    this.referencesEl.replaceChildren(
      h('h3', {}, `References · ${refs.length}`),
      h('ol', { class: 'reference-list' }, items),
    );
  }
}
