// The chat page: sessions (search, rename, pin, delete with undo), a new session with its knowledge bases and
// suggested first questions, the question box, the running turn (stop), resuming a turn after a reload, and
// what can be done with an answer (copy, regenerate, edit and resend, feedback, branch, rewind).
//
// Resume: while a turn streams, its state (everything shown so far and the id of the last frame) is kept in
// sessionStorage under ragline.turn.<message id>. After a reload the page restores that state and asks for
// the events after it (Last-Event-ID), so the answer continues where it was and ends with the same text. A
// turn still running with no saved state (another tab, another browser) is replayed from its first event.
//
// Alternatives: a regenerated or edited turn is stored with `alternative_of` (the first answer of its group);
// the page shows a group as one turn with ‹ n/m › to switch between its answers.

import { api, apiReply, streamUrl } from './api.js';
import { byId, confirmAction, count, formatDate, h, provisionalTitle, toast } from './dom.js';
import { Attachments } from './images.js';
import { conversationJson, conversationMarkdown, download, fileName } from './export.js';
import { SessionOptions } from './options.js';
import { followStream } from './sse.js';
import { Turn, emptyState, isEnded, storedState } from './turn.js';
import { t } from './i18n.js';

const SAVED = 'ragline.turn.';
const SEARCH_DELAY_MS = 250;

function loadSaved(messageId) {
  try {
    return JSON.parse(sessionStorage.getItem(SAVED + messageId) || 'null');
  } catch {
    return null;
  }
}

function save(state) {
  try {
    sessionStorage.setItem(SAVED + state.messageId, JSON.stringify(state));
  } catch {
    // Storage full or disabled: the turn still streams; a reload replays it from the start instead.
  }
}

function forget(messageId) {
  sessionStorage.removeItem(SAVED + messageId);
}

const sid = (id) => encodeURIComponent(id);
const eventsPath = (sessionId, messageId) => `/api/v1/sessions/${sid(sessionId)}/messages/${sid(messageId)}/events`;

/** Turns that are alternatives of one another, shown as one with a switcher. */
class TurnGroup {
  constructor(root) {
    this.root = root;
    this.turns = [];
    this.index = 0;
    this.counter = h('span', { class: 'alt-count', 'aria-live': 'polite' });
    this.prev = h('button', { type: 'button', class: 'ghost small', 'aria-label': t('alt.previous'), onclick: () => this.select(this.index - 1) }, '‹');
    this.next = h('button', { type: 'button', class: 'ghost small', 'aria-label': t('alt.next'), onclick: () => this.select(this.index + 1) }, '›');
    this.nav = h('div', { class: 'alt-nav', role: 'group', 'aria-label': t('alt.group'), hidden: true }, this.prev, this.counter, this.next);
    this.el = h('section', { class: 'turn-group' }, this.nav);
  }

  add(turn) {
    this.turns.push(turn);
    this.el.append(turn.el);
    this.select(this.turns.length - 1);
  }

  get current() {
    return this.turns[this.index];
  }

  select(index) {
    if (index < 0 || index >= this.turns.length) return;
    this.index = index;
    this.turns.forEach((turn, i) => {
      turn.el.hidden = i !== index;
    });
    const many = this.turns.length > 1;
    this.nav.hidden = !many;
    this.el.dataset.alternatives = String(this.turns.length);
    this.el.dataset.shown = String(index + 1);
    this.counter.textContent = `${index + 1} / ${this.turns.length}`;
    this.prev.disabled = index === 0;
    this.next.disabled = index === this.turns.length - 1;
  }
}

/** What kind of chat model this is, in the page's language (the server describes it in English). */
export function describeModel(model) {
  const known = ['extractive', 'endpoint', 'gguf', 'bedrock'];
  return known.includes(model.kind) ? t(`model.kind.${model.kind}`) : model.name;
}

export class ChatPage {
  constructor({ openSource, onModel = () => {}, closeDrawer = () => {} }) {
    this.openSource = openSource;
    this.onModel = onModel;
    this.closeDrawer = closeDrawer;
    this.sessionId = null;
    this.session = null;
    this.shown = false;
    this.live = null; // {turn, controller} of the turn being streamed
    this.showToken = 0;
    // The view being shown (knowledge bases, session, turns): a question waits for it, so one asked while the
    // page still loads goes to the knowledge bases it would have shown, not to none.
    this.loaded = Promise.resolve();
    this.knowledgeBases = [];
    this.groups = [];
    this.pendingDeletes = new Set();
    this.sessionList = byId('session-list');
    this.search = byId('session-search');
    this.title = byId('session-title');
    this.scope = byId('session-kbs');
    this.newPanel = byId('new-session-panel');
    this.kbChoice = byId('kb-choice');
    this.suggestions = byId('suggestions');
    this.turns = byId('turns');
    this.turnList = byId('turn-list');
    this.form = byId('composer');
    this.question = byId('question');
    this.askButton = byId('ask');
    this.stopButton = byId('stop');
    this.composerError = byId('composer-error');
    this.optionsButton = byId('options-button');
    this.modelPicker = byId('model-picker');
    this.modelPicker.addEventListener('change', () => {
      this.options.use(this.sessionId, this.session, this.knowledgeBases);
      this.options.model = this.modelPicker.value;
    });
    this.options = new SessionOptions({ onChange: () => this.showOptionCount() });
    this.attachments = new Attachments({
      form: this.form,
      input: byId('attach-input'),
      button: byId('attach'),
      tray: byId('attachments'),
      onError: (message) => {
        this.composerError.textContent = message;
        this.composerError.hidden = !message;
      },
    });
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submit();
    });
    this.question.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      }
    });
    this.stopButton.addEventListener('click', () => this.stop());
    this.optionsButton.addEventListener('click', () => {
      this.options.use(this.sessionId, this.session, this.knowledgeBases);
      this.options.open();
    });
    // Follow the answer while the reader is at the bottom; scrolling up stops following.
    this.stick = true;
    this.turns.addEventListener('scroll', () => {
      const el = this.turns;
      this.stick = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    });
    byId('new-session').addEventListener('click', () => {
      this.closeDrawer();
      if (window.location.hash === '#/' || window.location.hash === '') this.show(null, { force: true });
      else window.location.hash = '#/';
    });
    this.sessionList.addEventListener('click', (event) => {
      if (event.target.closest('a.session-link')) this.closeDrawer();
    });
    let searchTimer = null;
    this.search.addEventListener('input', () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => this.refreshSessions().catch(() => {}), SEARCH_DELAY_MS);
    });
    this.kbChoice.addEventListener('change', () => this.loadSuggestions());
    this.exportButton = byId('export-button');
    this.exportOptions = byId('export-options');
    this.exportButton.addEventListener('click', () => this.showExport(this.exportOptions.hidden));
    for (const button of this.exportOptions.querySelectorAll('button[data-format]')) {
      button.addEventListener('click', () => this.exportAs(button.dataset.format));
    }
    // The export menu closes on Escape (focus back on its button) and on a click elsewhere.
    this.exportOptions.parentElement.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !this.exportOptions.hidden) {
        this.showExport(false);
        this.exportButton.focus();
      }
    });
    document.addEventListener('click', (event) => {
      if (!this.exportOptions.hidden && !this.exportOptions.parentElement.contains(event.target)) this.showExport(false);
    });
  }

  showExport(open) {
    this.exportOptions.hidden = !open;
    this.exportButton.setAttribute('aria-expanded', String(open));
    if (open) this.exportOptions.querySelector('button').focus();
  }

  /** Downloads the session's conversation as Markdown (with its sources) or JSON, from its stored messages. */
  async exportAs(format) {
    this.showExport(false);
    const sessionId = this.sessionId;
    if (!sessionId) return;
    try {
      const [session, messages] = await Promise.all([
        api('GET', `/api/v1/sessions/${sid(sessionId)}`),
        api('GET', `/api/v1/sessions/${sid(sessionId)}/messages`),
      ]);
      const exportedAt = new Date();
      if (format === 'json') {
        download(fileName(session.title, 'json'), 'application/json', conversationJson(session, messages, { exportedAt }));
      } else {
        const kbNames = session.knowledge_base_ids.map((id) => (this.knowledgeBases.find((kb) => kb.id === id) || { name: id }).name);
        download(fileName(session.title, 'md'), 'text/markdown', conversationMarkdown(session, messages, { kbNames, exportedAt }));
      }
      this.exportButton.focus();
    } catch (err) {
      this.showError(this.composerError, { ...err, message: t('export.failed', { error: err.message }) });
    }
  }

  /** Leaving the page: stop reading (the turn goes on; its saved state lets it resume later). */
  leave() {
    this.abortLive();
    this.shown = false;
  }

  abortLive() {
    if (this.live) {
      this.live.controller.abort();
      this.live = null;
    }
    this.setRunning(false);
  }

  setRunning(running) {
    this.askButton.disabled = running;
    this.stopButton.hidden = !running;
    this.stopButton.disabled = false;
    for (const group of this.groups) for (const turn of group.turns) turn.busy = running;
  }

  showError(el, error) {
    // A refused key is the key dialog's to say; an unreachable API is the banner's (with a link to Settings).
    if (error && (error.status === 401 || error.status === 0)) return;
    el.textContent = error.message || String(error);
    el.hidden = false;
  }

  showOptionCount() {
    this.options.use(this.sessionId, this.session, this.knowledgeBases);
    const n = this.options.count();
    this.optionsButton.textContent = n ? t('options.count', { n }) : t('options');
    const chosen = this.options.model;
    this.modelPicker.value = [...this.modelPicker.options].some((o) => o.value === chosen) ? chosen : '';
  }

  /** The chat models of GET /models in the session's model picker ('' leaves the server's default). */
  setModels(models) {
    const chat = models.filter((m) => m.type === 'KnowledgeQA');
    const label = (m) => (m.kind === 'extractive' ? t('model.extractive') : m.name);
    const fallback = chat.find((m) => m.is_default);
    this.modelPicker.replaceChildren(
      h('option', { value: '' }, fallback ? t('model.default', { model: label(fallback) }) : t('model.default_unknown')),
      ...chat.map((m) => h('option', { value: m.id, title: describeModel(m) }, label(m))),
    );
    this.modelPicker.hidden = chat.length < 2;
    this.showOptionCount();
  }

  async show(sessionId, { force = false } = {}) {
    sessionId = sessionId || null;
    if (!force && this.shown && sessionId === this.sessionId) {
      await this.refreshSessions();
      return;
    }
    const token = ++this.showToken;
    this.abortLive();
    this.sessionId = sessionId;
    this.session = null;
    this.shown = true;
    this.groups = [];
    this.turnList.replaceChildren();
    this.composerError.hidden = true;
    this.newPanel.hidden = true;
    this.title.textContent = sessionId ? t('loading') : t('session.new');
    this.scope.textContent = '';
    this.exportButton.hidden = true;
    this.showExport(false);
    this.showOptionCount();
    this.loaded = this.load(sessionId, token);
    await this.loaded;
  }

  /** The view's data for show(): its knowledge bases, and the session's header and turns (`token`: this showing). */
  async load(sessionId, token) {
    let bases;
    try {
      [bases] = await Promise.all([api('GET', '/api/v1/knowledge-bases'), this.refreshSessions()]);
    } catch (err) {
      if (token !== this.showToken) return;
      this.title.textContent = err.status === 0 ? t('error.api') : sessionId ? t('session.unavailable') : t('session.new');
      this.showError(this.composerError, err);
      return;
    }
    if (token !== this.showToken) return;
    this.knowledgeBases = bases;
    if (!sessionId) {
      this.renderNewSession();
      this.question.focus();
      return;
    }
    let session;
    let messages;
    try {
      [session, messages] = await Promise.all([
        api('GET', `/api/v1/sessions/${sid(sessionId)}`),
        api('GET', `/api/v1/sessions/${sid(sessionId)}/messages`),
      ]);
    } catch (err) {
      if (token !== this.showToken) return;
      this.title.textContent = err.status === 0 ? t('error.api') : t('session.unavailable');
      this.showError(this.composerError, err);
      return;
    }
    if (token !== this.showToken) return;
    this.setHeader(session);
    this.restore(sessionId, messages);
  }

  /** Renders the stored turns (alternatives grouped) and resumes the one still running, if any. */
  restore(sessionId, messages) {
    const pairs = [];
    for (const message of messages) {
      const open = pairs[pairs.length - 1];
      if (message.role === 'user' || !open || open.assistant) {
        pairs.push({ user: message.role === 'user' ? message : null, assistant: message.role === 'user' ? null : message });
      } else {
        open.assistant = message;
      }
    }
    let resume = null;
    pairs.forEach(({ user, assistant }, index) => {
      const saved = assistant ? loadSaved(assistant.id) : null;
      const root = (assistant && assistant.alternative_of) || (user && user.alternative_of) || '';
      if (assistant && saved && !isEnded(saved)) {
        // This tab was reading it: continue after the last frame it applied.
        const turn = this.addTurn(saved, root);
        resume = { turn, lastEventId: saved.lastSeq };
      } else if (assistant && !assistant.is_completed && index === pairs.length - 1) {
        const turn = this.addTurn(
          emptyState({
            sessionId,
            messageId: assistant.id,
            requestId: assistant.request_id,
            query: user ? user.content : '',
            images: (user && user.images) || [],
            userMessageId: user ? user.id : '',
            askedAt: user ? user.created_at : '',
            streamUrl: streamUrl(eventsPath(sessionId, assistant.id)),
            alternativeOf: root,
          }),
          root,
        );
        resume = { turn, lastEventId: null };
      } else {
        if (saved) forget(assistant.id);
        this.addTurn(storedState(sessionId, user, assistant), root);
      }
    });
    this.markLast();
    this.scrollToEnd(true);
    if (resume) this.follow(resume.turn, resume.lastEventId);
  }

  renderNewSession() {
    this.title.textContent = t('session.new');
    this.scope.textContent = '';
    this.newPanel.hidden = false;
    if (this.knowledgeBases.length === 0) {
      this.kbChoice.replaceChildren(
        h('p', { class: 'muted' }, t('new.no_kbs'), ' ', h('a', { href: '#/kb' }, t('new.create_kb'))),
      );
      this.suggestions.hidden = true;
      return;
    }
    this.kbChoice.replaceChildren(
      ...this.knowledgeBases.map((kb) =>
        h(
          'label',
          { class: 'check' },
          h('input', { type: 'checkbox', name: 'kb', value: kb.id, checked: true }),
          h('span', {}, kb.name),
          h('span', { class: 'muted' }, ` ${count(kb.document_count, 'document')}`),
        ),
      ),
    );
    this.loadSuggestions();
  }

  checkedKbs() {
    return [...this.kbChoice.querySelectorAll('input[name="kb"]:checked')].map((input) => input.value);
  }

  /** Questions to start with, from the chosen knowledge bases' titles and headings (no model involved). */
  async loadSuggestions() {
    const token = this.showToken;
    const kbIds = this.checkedKbs().slice(0, 3);
    if (!kbIds.length) {
      this.suggestions.hidden = true;
      return;
    }
    let lists;
    try {
      lists = await Promise.all(
        kbIds.map((id) => api('GET', `/api/v1/knowledge-bases/${sid(id)}/suggested-questions?limit=4`)),
      );
    } catch {
      this.suggestions.hidden = true;
      return;
    }
    if (token !== this.showToken || this.sessionId) return;
    const questions = [];
    for (let depth = 0; questions.length < 4 && lists.some((list) => depth < list.length); depth += 1) {
      for (const list of lists) if (depth < list.length && questions.length < 4) questions.push(list[depth]);
    }
    this.suggestions.hidden = questions.length === 0;
    this.suggestions.replaceChildren(
      h('h2', { id: 'suggestions-heading' }, t('new.try')),
      h(
        'ul',
        { class: 'suggestion-list', 'aria-labelledby': 'suggestions-heading' },
        questions.map((s) =>
          h(
            'li',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'suggestion',
                title: t('new.from', { source: `${s.knowledge_title}${s.heading ? ` › ${s.heading}` : ''}` }),
                onclick: () => {
                  this.question.value = s.question;
                  this.submit();
                },
              },
              s.question,
            ),
          ),
        ),
      ),
    );
  }

  setHeader(session) {
    this.session = session;
    this.title.textContent = session.title || t('session.untitled');
    this.title.classList.toggle('provisional', Boolean(session.title_provisional));
    const names = session.knowledge_base_ids.map((id) => {
      const kb = this.knowledgeBases.find((k) => k.id === id);
      return kb ? kb.name : id;
    });
    this.scope.textContent = names.length ? t('session.scope', { names: names.join(', ') }) : t('session.no_kb');
    this.newPanel.hidden = true;
    this.exportButton.hidden = false;
    this.showOptionCount();
  }

  // The session list --------------------------------------------------------------------------------------
  async refreshSessions() {
    const keyword = this.search.value.trim();
    const query = keyword ? `&keyword=${encodeURIComponent(keyword)}` : '';
    const items = (await api('GET', `/api/v1/sessions?page_size=1000${query}`)).filter((s) => !this.pendingDeletes.has(s.id));
    this.sessionList.replaceChildren(...items.map((session) => this.sessionItem(session)));
    if (items.length === 0) {
      this.sessionList.append(h('li', { class: 'muted empty' }, keyword ? t('sessions.no_match') : t('sessions.none')));
    }
  }

  sessionItem(session) {
    const title = session.title || t('session.untitled');
    const menuId = `session-menu-${session.id}`;
    // The list is drawn again when sessions change (a turn ends, a title comes): an open menu or a rename in
    // progress stays as it was.
    const actions = h(
      'div',
      { class: 'session-actions', id: menuId, hidden: this.openMenu !== session.id },
      h('button', { type: 'button', class: 'small', dataset: { action: 'rename' }, onclick: () => this.startRename(item, session) }, t('rename')),
      h(
        'button',
        { type: 'button', class: 'small', dataset: { action: 'pin' }, onclick: () => this.pin(session) },
        session.is_pinned ? t('unpin') : t('pin'),
      ),
      h('button', { type: 'button', class: 'small danger', dataset: { action: 'delete' }, onclick: () => this.remove(session) }, t('delete')),
    );
    const more = h(
      'button',
      {
        type: 'button',
        class: 'ghost small session-more',
        'aria-label': t('session.actions', { title }),
        'aria-expanded': String(this.openMenu === session.id),
        'aria-controls': menuId,
        onclick: () => {
          actions.hidden = !actions.hidden;
          this.openMenu = actions.hidden ? null : session.id;
          more.setAttribute('aria-expanded', String(!actions.hidden));
        },
      },
      '⋯',
    );
    const item = h(
      'li',
      { class: `session-item${session.is_pinned ? ' pinned' : ''}`, dataset: { sessionId: session.id } },
      h(
        'div',
        { class: 'session-row' },
        h(
          'a',
          {
            href: `#/s/${sid(session.id)}`,
            class: `session-link${session.id === this.sessionId ? ' active' : ''}`,
            'aria-current': session.id === this.sessionId ? 'page' : null,
            dataset: { sessionId: session.id },
          },
          h(
            'span',
            { class: `session-name${session.title_provisional ? ' provisional' : ''}` },
            session.is_pinned ? h('span', { class: 'pin-mark' }, t('session.pinned')) : null,
            title,
          ),
          session.matched_content ? h('span', { class: 'session-match' }, session.matched_content) : null,
          h('span', { class: 'session-date' }, formatDate(session.updated_at || session.created_at)),
        ),
        more,
      ),
      actions,
    );
    if (this.renaming && this.renaming.id === session.id) this.startRename(item, session, this.renaming.value);
    return item;
  }

  startRename(item, session, value = null) {
    this.openMenu = null;
    const input = h('input', { type: 'text', value: value ?? (session.title || ''), maxlength: '200', 'aria-label': t('session.title') });
    this.renaming = { id: session.id, value: input.value };
    input.addEventListener('input', () => {
      if (this.renaming) this.renaming.value = input.value;
    });
    const form = h(
      'form',
      {
        class: 'rename-form',
        onsubmit: async (event) => {
          event.preventDefault();
          const title = input.value.trim();
          if (!title) return;
          this.renaming = null;
          try {
            const updated = await api('PUT', `/api/v1/sessions/${sid(session.id)}`, { title });
            if (updated.id === this.sessionId) this.setHeader(updated);
          } catch (err) {
            this.showError(this.composerError, err);
          }
          await this.refreshSessions().catch(() => {});
        },
      },
      input,
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'small primary' }, t('save')), h('button', { type: 'button', class: 'small', onclick: () => { this.renaming = null; this.refreshSessions(); } }, t('cancel'))),
    );
    const hadFocus = value === null || document.activeElement?.closest('.rename-form');
    item.replaceChildren(form);
    if (hadFocus) {
      input.focus();
      if (value === null) input.select();
    }
  }

  async pin(session) {
    this.openMenu = null;
    try {
      await api(session.is_pinned ? 'DELETE' : 'POST', `/api/v1/sessions/${sid(session.id)}/pin`);
    } catch (err) {
      this.showError(this.composerError, err);
    }
    await this.refreshSessions().catch(() => {});
  }

  /** Hides the session at once and deletes it when the toast ends, unless the reader chose Undo. */
  async remove(session) {
    this.openMenu = null;
    this.pendingDeletes.add(session.id);
    await this.refreshSessions().catch(() => {});
    if (session.id === this.sessionId) window.location.hash = '#/';
    const how = await toast(t('session.deleted', { title: session.title || t('session.untitled') }), { action: t('undo') });
    this.pendingDeletes.delete(session.id);
    if (how !== 'action') {
      try {
        await api('DELETE', `/api/v1/sessions/${sid(session.id)}`);
      } catch (err) {
        this.showError(this.composerError, err);
      }
    }
    await this.refreshSessions().catch(() => {});
  }

  setTitle(title, sessionId) {
    if (!title) return;
    if (sessionId === this.sessionId) {
      this.title.textContent = title;
      this.title.classList.remove('provisional');
      if (this.session) this.session = { ...this.session, title, title_provisional: false };
    }
    for (const link of this.sessionList.querySelectorAll('a.session-link')) {
      if (link.dataset.sessionId === sessionId) {
        const name = link.querySelector('.session-name');
        name.textContent = title;
        name.classList.remove('provisional');
      }
    }
  }

  // Turns -----------------------------------------------------------------------------------------------------
  addTurn(state, root = '', group = null) {
    const turn = new Turn(state, {
      onCite: (citation) => this.openSource(citation),
      onTitle: (title, sessionId) => this.setTitle(title, sessionId),
      onRender: () => this.scrollToEnd(false),
      onModel: (modelId) => this.onModel(modelId),
      onRegenerate: (t) => this.regenerate(t),
      onEdit: (t, query) => this.edit(t, query),
      onFeedback: (t, rating, comment) =>
        api('PUT', `/api/v1/sessions/${sid(t.state.sessionId)}/messages/${sid(t.state.messageId)}/feedback`, { rating, comment }),
      onFork: (t) => this.fork(t),
      onRewind: (t) => this.rewind(t),
    });
    let target = group;
    if (!target && root) target = this.groups.find((g) => g.root === root) || null;
    if (!target) {
      target = new TurnGroup(state.messageId);
      this.groups.push(target);
      this.turnList.append(target.el);
    }
    target.add(turn);
    return turn;
  }

  groupOf(turn) {
    return this.groups.find((g) => g.turns.includes(turn)) || null;
  }

  markLast() {
    this.groups.forEach((group, i) => {
      for (const turn of group.turns) turn.setLast(i === this.groups.length - 1);
    });
  }

  scrollToEnd(always) {
    if (always) this.stick = true;
    if (this.stick) this.turns.scrollTop = this.turns.scrollHeight;
  }

  regenerate(turn) {
    const group = this.groupOf(turn);
    if (!group || this.live) return;
    this.submit(turn.state.query, { group, images: turn.state.images });
  }

  /** Edit and resend: the last turn gets an alternative; an earlier one continues in a branch before it. */
  async edit(turn, query) {
    const group = this.groupOf(turn);
    if (!group || this.live) return;
    const index = this.groups.indexOf(group);
    const images = turn.state.images;
    if (index === this.groups.length - 1) {
      this.submit(query, { group, images });
      return;
    }
    try {
      let target;
      if (index === 0) {
        target = await api('POST', '/api/v1/sessions', { knowledge_base_ids: this.session ? this.session.knowledge_base_ids : [] });
      } else {
        const before = this.groups[index - 1].current;
        target = (await this.forkAt(before.state.messageId)).data;
      }
      await this.openSession(target.id);
      this.submit(query, { images });
    } catch (err) {
      this.showError(this.composerError, err);
    }
  }

  forkAt(messageId) {
    return apiReply('POST', `/api/v1/sessions/${sid(this.sessionId)}/fork`, { message_id: messageId });
  }

  async openSession(sessionId) {
    this.options.use(this.sessionId, this.session, this.knowledgeBases);
    window.history.pushState(null, '', `#/s/${sid(sessionId)}`);
    await this.show(sessionId, { force: true });
  }

  async fork(turn) {
    try {
      const reply = await this.forkAt(turn.state.messageId);
      await this.openSession(reply.data.id);
      toast(t('session.branched', { turns: count(reply.messages.length / 2, 'turn') }));
    } catch (err) {
      this.showError(this.composerError, err);
    }
  }

  async rewind(turn) {
    const group = this.groupOf(turn);
    const later = this.groups.length - this.groups.indexOf(group) - 1;
    const yes = await confirmAction(t('rewind.confirm', { turns: count(later, 'turn') }), t('rewind.action'));
    if (!yes) return;
    try {
      await api('POST', `/api/v1/sessions/${sid(this.sessionId)}/rewind`, { message_id: turn.state.messageId });
      await this.show(this.sessionId, { force: true });
    } catch (err) {
      this.showError(this.composerError, err);
    }
  }

  /**
   * Asks `query` (the question box's text and attached images by default); `group`: as an alternative of that
   * turn group; `images`: a stored turn's images ({url} handles) asked again.
   */
  async submit(text = null, { group = null, images = [] } = {}) {
    const query = (text === null ? this.question.value : text).trim();
    if (this.live || this.submitting) return;
    // A question may be its images alone (the server takes images without a query).
    if (!query && !(text === null ? this.attachments.count : images.length)) return;
    this.submitting = true;
    this.composerError.hidden = true;
    this.askButton.disabled = true;
    try {
      await this.loaded;
      const attached = text === null ? await this.attachments.payload() : images.map((image) => ({ url: image.url }));
      const previews = text === null ? this.attachments.previews() : [];
      let sessionId = this.sessionId;
      if (!sessionId) {
        const session = await api('POST', '/api/v1/sessions', { knowledge_base_ids: this.checkedKbs() });
        sessionId = session.id;
        this.sessionId = sessionId;
        this.options.adopt(sessionId);
        // The address follows without a hashchange (which would reload the page's view).
        window.history.replaceState(null, '', `#/s/${sid(sessionId)}`);
        this.setHeader({ ...session, title: provisionalTitle(query), title_provisional: true });
      }
      this.options.use(sessionId, this.session, this.knowledgeBases);
      const body = { ...this.options.request(), query };
      if (group) body.alternative_of = group.root;
      if (attached.length) body.images = attached;
      const ids = await api('POST', `/api/v1/sessions/${sid(sessionId)}/questions`, body);
      if (text === null) {
        this.question.value = '';
        this.attachments.clear({ keep: previews });
      }
      const turn = this.addTurn(
        emptyState({
          sessionId,
          messageId: ids.assistant_message_id,
          requestId: ids.request_id,
          query,
          // Embedded: a path on this server; AWS: stream_reader's function URL (absolute).
          streamUrl: streamUrl(ids.stream_url || eventsPath(sessionId, ids.assistant_message_id)),
          alternativeOf: group ? group.root : '',
          images: text === null ? [] : images,
          userMessageId: ids.user_message_id,
          askedAt: new Date().toISOString(),
        }),
        '',
        group,
      );
      if (previews.length) {
        // Shown from the files at once; the stored handles follow (and are what a reload shows).
        turn.previews = previews;
        turn.schedule();
        this.learnImages(turn);
      }
      this.markLast();
      this.scrollToEnd(true);
      save(turn.state);
      this.refreshSessions().catch(() => {});
      this.follow(turn, null);
    } catch (err) {
      this.showError(this.composerError, err);
    } finally {
      this.submitting = false;
      if (!this.live) this.askButton.disabled = false;
    }
  }

  /** The stored handles of a turn's question images (from its user message), kept in the turn's state. */
  async learnImages(turn) {
    const { sessionId, userMessageId } = turn.state;
    if (!sessionId || !userMessageId) return;
    try {
      const messages = await api('GET', `/api/v1/sessions/${sid(sessionId)}/messages`);
      const user = messages.find((m) => m.id === userMessageId);
      if (!user || !(user.images || []).length) return;
      turn.state.images = user.images;
      if (!isEnded(turn.state)) save(turn.state);
      turn.schedule();
    } catch {
      // The previews stay; a reload shows the stored images.
    }
  }

  async follow(turn, lastEventId) {
    const controller = new AbortController();
    this.live = { turn, controller };
    this.setRunning(true);
    const resuming = lastEventId !== null && lastEventId !== undefined;
    if (resuming) turn.state.resumedFrom = lastEventId;
    turn.setStatus(resuming ? t('status.resuming', { seq: lastEventId }) : t('status.waiting'));
    try {
      const result = await followStream(turn.state.streamUrl, {
        lastEventId: resuming ? lastEventId : null,
        signal: controller.signal,
        onFrame: (frame, seq) => {
          turn.apply(frame, seq);
          save(turn.state);
        },
        onStatus: (status) => turn.setStatus(status === 'reconnecting' ? t('status.reconnecting') : ''),
      });
      if (result.ended !== 'aborted') forget(turn.state.messageId);
    } catch (err) {
      if (!controller.signal.aborted) {
        turn.fail(err);
        if (err.status !== 401) forget(turn.state.messageId);
      }
    } finally {
      turn.setStatus('');
      if (this.live && this.live.turn === turn) {
        this.live = null;
        this.setRunning(false);
        this.refreshSessions().catch(() => {});
      }
    }
  }

  async stop() {
    if (!this.live) return;
    const { turn } = this.live;
    this.stopButton.disabled = true;
    turn.setStatus(t('status.stopping'));
    try {
      await api('POST', `/api/v1/sessions/${sid(turn.state.sessionId)}/stop`, { message_id: turn.state.messageId });
      // The stream now ends with its `stop` frame; the partial answer stays as it is.
    } catch (err) {
      this.stopButton.disabled = false;
      this.showError(this.composerError, err);
    }
  }
}
