// The page's entry point: the API key prompt, settings, routing between the chat and knowledge-base pages.
//
// Routes (in the address's hash): #/ a new session, #/s/<session id> a session, #/kb the knowledge bases,
// #/kb/<id> one knowledge base. The page holds no secret: the API key is typed in once and kept in this
// browser's localStorage (Settings → Forget API key removes it).

import { onUnauthorized, settings } from './api.js';
import { ChatPage } from './chat.js';
import { byId } from './dom.js';
import { KnowledgePage } from './kb.js';
import { SourceViewer } from './viewer.js';

const viewer = new SourceViewer();
const chat = new ChatPage({ openSource: (citation) => viewer.open(citation) });
const knowledge = new KnowledgePage();
const chatView = byId('chat-view');
const kbView = byId('kb-view');

// The API key ------------------------------------------------------------------------------------------------
const keyDialog = byId('key-dialog');
const keyForm = byId('key-form');
const keyInput = byId('key-input');
const keyMessage = byId('key-message');
let keyPrompt = null;

function askForKey(message = '') {
  if (keyPrompt) return keyPrompt;
  keyPrompt = new Promise((resolve) => {
    keyMessage.textContent = message;
    keyMessage.hidden = !message;
    keyInput.value = '';
    const done = (event) => {
      event.preventDefault();
      const key = keyInput.value.trim();
      if (!key) return;
      settings.apiKey = key;
      keyInput.value = '';
      keyForm.removeEventListener('submit', done);
      keyDialog.close();
      keyPrompt = null;
      resolve(key);
    };
    keyForm.addEventListener('submit', done);
    keyDialog.showModal();
    keyInput.focus();
  });
  return keyPrompt;
}

// Without a key the page can do nothing: Escape does not dismiss the prompt.
keyDialog.addEventListener('cancel', (event) => event.preventDefault());

onUnauthorized(() => {
  const hadKey = Boolean(settings.apiKey);
  settings.apiKey = '';
  askForKey(hadKey ? 'The server did not accept that API key. Enter a valid key.' : '').then(() => route(true));
});

// Settings ----------------------------------------------------------------------------------------------------
const settingsDialog = byId('settings-dialog');
const apiBaseInput = byId('api-base');
const streamBaseInput = byId('stream-base');

byId('settings-button').addEventListener('click', () => {
  apiBaseInput.value = settings.apiBase;
  streamBaseInput.value = settings.streamBase;
  byId('key-state').textContent = settings.apiKey ? 'An API key is stored in this browser.' : 'No API key is stored.';
  settingsDialog.showModal();
});
byId('settings-cancel').addEventListener('click', () => settingsDialog.close());
byId('settings-form').addEventListener('submit', (event) => {
  event.preventDefault();
  settings.apiBase = apiBaseInput.value;
  settings.streamBase = streamBaseInput.value;
  settingsDialog.close();
  route(true);
});
byId('forget-key').addEventListener('click', () => {
  settings.apiKey = '';
  settingsDialog.close();
  chat.leave();
  askForKey().then(() => route(true));
});

// Routing -----------------------------------------------------------------------------------------------------
function parseRoute() {
  const parts = window.location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'kb') return { page: 'kb', kbId: parts[1] || null };
  if (parts[0] === 's' && parts[1]) return { page: 'chat', sessionId: parts[1] };
  return { page: 'chat', sessionId: null };
}

async function route(force = false) {
  if (!settings.apiKey) await askForKey();
  const where = parseRoute();
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === where.page) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  chatView.hidden = where.page !== 'chat';
  kbView.hidden = where.page !== 'kb';
  if (where.page === 'kb') {
    chat.leave();
    await knowledge.show(where.kbId);
  } else {
    await chat.show(where.sessionId, { force });
  }
}

window.addEventListener('hashchange', () => route());
route();
