// The chat page: sessions (with their generated titles), a new session with its knowledge bases, the
// question box, the running turn (stop), and resuming a turn after a reload.
//
// Resume: while a turn streams, its state (everything shown so far and the id of the last frame) is kept in
// sessionStorage under ragline.turn.<message id>. After a reload the page restores that state and asks for
// the events after it (Last-Event-ID), so the answer continues where it was and ends with the same text. A
// turn still running with no saved state (another tab, another browser) is replayed from its first event.

import { api, streamUrl } from './api.js';
import { byId, count, formatDate, h } from './dom.js';
import { followStream } from './sse.js';
import { Turn, emptyState, isEnded, storedState } from './turn.js';

const SAVED = 'ragline.turn.';

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

const eventsPath = (sessionId, messageId) =>
  `/api/v1/sessions/${encodeURIComponent(sessionId)}/messages/${encodeURIComponent(messageId)}/events`;

export class ChatPage {
  constructor({ openSource }) {
    this.openSource = openSource;
    this.sessionId = null;
    this.shown = false;
    this.live = null; // {turn, controller} of the turn being streamed
    this.showToken = 0;
    this.knowledgeBases = [];
    this.sessionList = byId('session-list');
    this.title = byId('session-title');
    this.scope = byId('session-kbs');
    this.newPanel = byId('new-session-panel');
    this.kbChoice = byId('kb-choice');
    this.turns = byId('turns');
    this.form = byId('composer');
    this.question = byId('question');
    this.askButton = byId('ask');
    this.stopButton = byId('stop');
    this.composerError = byId('composer-error');
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
    // Follow the answer while the reader is at the bottom; scrolling up stops following.
    this.stick = true;
    this.turns.addEventListener('scroll', () => {
      const el = this.turns;
      this.stick = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    });
    byId('new-session').addEventListener('click', () => {
      if (window.location.hash === '#/' || window.location.hash === '') this.show(null, { force: true });
      else window.location.hash = '#/';
    });
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
  }

  showError(el, error) {
    el.textContent = error.message || String(error);
    el.hidden = false;
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
    this.shown = true;
    this.turns.replaceChildren();
    this.composerError.hidden = true;
    this.newPanel.hidden = true;
    this.title.textContent = sessionId ? 'Loading…' : 'New session';
    this.scope.textContent = '';
    let bases;
    try {
      [bases] = await Promise.all([api('GET', '/api/v1/knowledge-bases'), this.refreshSessions()]);
    } catch (err) {
      if (token === this.showToken) this.showError(this.composerError, err);
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
        api('GET', `/api/v1/sessions/${encodeURIComponent(sessionId)}`),
        api('GET', `/api/v1/sessions/${encodeURIComponent(sessionId)}/messages`),
      ]);
    } catch (err) {
      if (token !== this.showToken) return;
      this.title.textContent = 'Session unavailable';
      this.showError(this.composerError, err);
      return;
    }
    if (token !== this.showToken) return;
    this.setHeader(session);
    this.restore(sessionId, messages);
  }

  /** Renders the stored turns and resumes the one still running, if any. */
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
      if (assistant && saved && !isEnded(saved)) {
        // This tab was reading it: continue after the last frame it applied.
        const turn = this.addTurn(saved);
        resume = { turn, lastEventId: saved.lastSeq };
      } else if (assistant && !assistant.is_completed && index === pairs.length - 1) {
        const turn = this.addTurn(
          emptyState({
            sessionId,
            messageId: assistant.id,
            requestId: assistant.request_id,
            query: user ? user.content : '',
            streamUrl: streamUrl(eventsPath(sessionId, assistant.id)),
          }),
        );
        resume = { turn, lastEventId: null };
      } else {
        if (saved) forget(assistant.id);
        this.addTurn(storedState(sessionId, user, assistant));
      }
    });
    this.scrollToEnd(true);
    if (resume) this.follow(resume.turn, resume.lastEventId);
  }

  renderNewSession() {
    this.title.textContent = 'New session';
    this.scope.textContent = '';
    this.newPanel.hidden = false;
    if (this.knowledgeBases.length === 0) {
      this.kbChoice.replaceChildren(
        h(
          'p',
          { class: 'muted' },
          'No knowledge bases yet: ',
          h('a', { href: '#/kb' }, 'create one'),
          ', or ask without one.',
        ),
      );
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
  }

  setHeader(session) {
    this.title.textContent = session.title || 'Untitled session';
    const names = session.knowledge_base_ids.map((id) => {
      const kb = this.knowledgeBases.find((k) => k.id === id);
      return kb ? kb.name : id;
    });
    this.scope.textContent = names.length ? `Knowledge: ${names.join(', ')}` : 'No knowledge base';
    this.newPanel.hidden = true;
  }

  async refreshSessions() {
    const items = await api('GET', '/api/v1/sessions?page_size=1000');
    this.sessionList.replaceChildren(
      ...items.map((session) =>
        h(
          'li',
          {},
          h(
            'a',
            {
              href: `#/s/${encodeURIComponent(session.id)}`,
              class: `session-link${session.id === this.sessionId ? ' active' : ''}`,
              dataset: { sessionId: session.id },
            },
            h('span', { class: 'session-name' }, session.title || 'Untitled session'),
            h('span', { class: 'session-date' }, formatDate(session.updated_at || session.created_at)),
          ),
        ),
      ),
    );
    if (items.length === 0) this.sessionList.append(h('li', { class: 'muted empty' }, 'No sessions yet.'));
  }

  setTitle(title, sessionId) {
    if (!title) return;
    if (sessionId === this.sessionId) this.title.textContent = title;
    for (const link of this.sessionList.querySelectorAll('a.session-link')) {
      if (link.dataset.sessionId === sessionId) link.querySelector('.session-name').textContent = title;
    }
  }

  addTurn(state) {
    const turn = new Turn(state, {
      onCite: (citation) => this.openSource(citation),
      onTitle: (title, sessionId) => this.setTitle(title, sessionId),
      onRender: () => this.scrollToEnd(false),
    });
    this.turns.append(turn.el);
    return turn;
  }

  scrollToEnd(always) {
    if (always) this.stick = true;
    if (this.stick) this.turns.scrollTop = this.turns.scrollHeight;
  }

  async submit() {
    const query = this.question.value.trim();
    if (!query || this.live || this.submitting) return;
    this.submitting = true;
    this.composerError.hidden = true;
    this.askButton.disabled = true;
    try {
      let sessionId = this.sessionId;
      if (!sessionId) {
        const ids = [...this.kbChoice.querySelectorAll('input[name="kb"]:checked')].map((input) => input.value);
        const session = await api('POST', '/api/v1/sessions', { knowledge_base_ids: ids });
        sessionId = session.id;
        this.sessionId = sessionId;
        // The address follows without a hashchange (which would reload the page's view).
        window.history.replaceState(null, '', `#/s/${encodeURIComponent(sessionId)}`);
        this.setHeader(session);
        this.refreshSessions().catch(() => {});
      }
      const ids = await api('POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/questions`, { query });
      this.question.value = '';
      const turn = this.addTurn(
        emptyState({
          sessionId,
          messageId: ids.assistant_message_id,
          requestId: ids.request_id,
          query,
          // Embedded: a path on this server; AWS: stream_reader's function URL (absolute).
          streamUrl: streamUrl(ids.stream_url || eventsPath(sessionId, ids.assistant_message_id)),
        }),
      );
      this.scrollToEnd(true);
      save(turn.state);
      this.follow(turn, null);
    } catch (err) {
      this.showError(this.composerError, err);
    } finally {
      this.submitting = false;
      if (!this.live) this.askButton.disabled = false;
    }
  }

  async follow(turn, lastEventId) {
    const controller = new AbortController();
    this.live = { turn, controller };
    this.setRunning(true);
    const resuming = lastEventId !== null && lastEventId !== undefined;
    if (resuming) turn.state.resumedFrom = lastEventId;
    turn.setStatus(resuming ? `Resuming after event ${lastEventId}…` : 'Waiting for the answer…');
    try {
      const result = await followStream(turn.state.streamUrl, {
        lastEventId: resuming ? lastEventId : null,
        signal: controller.signal,
        onFrame: (frame, seq) => {
          turn.apply(frame, seq);
          save(turn.state);
        },
        onStatus: (status) => turn.setStatus(status === 'reconnecting' ? 'Connection lost — reconnecting…' : ''),
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
    turn.setStatus('Stopping…');
    try {
      await api('POST', `/api/v1/sessions/${encodeURIComponent(turn.state.sessionId)}/stop`, {
        message_id: turn.state.messageId,
      });
      // The stream now ends with its `stop` frame; the partial answer stays as it is.
    } catch (err) {
      this.stopButton.disabled = false;
      this.showError(this.composerError, err);
    }
  }
}
