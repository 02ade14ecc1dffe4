// The page's entry point: the API key prompt, settings, the side panel (a drawer on narrow screens), the
// answering model in the header, errors that say what to do, and routing between the pages.
//
// Routes (in the address's hash): #/ a new session, #/s/<session id> a session, #/kb the knowledge bases,
// #/kb/<id> one knowledge base, #/kb/<id>/search its search page. The page holds no secret: the API key is
// typed in once and kept in this browser's localStorage (Settings → Forget API key removes it).

import { api, onConnection, onUnauthorized, settings } from './api.js';
import { ChatPage, describeModel } from './chat.js';
import { byId } from './dom.js';
import { KnowledgePage } from './kb.js';
import { SourceViewer } from './viewer.js';
import { setUpLightbox } from './images.js';
import { LANGUAGES, locale, setLocale, t, translatePage } from './i18n.js';

translatePage();

// The language switch: the catalogues' languages, each named in itself.
const languagePicker = byId('language-picker');
for (const [code, name] of LANGUAGES) {
  const option = document.createElement('option');
  option.value = code;
  option.lang = code;
  option.textContent = name;
  option.translate = false;
  languagePicker.append(option);
}
languagePicker.value = locale;
languagePicker.addEventListener('change', () => setLocale(languagePicker.value));

const chatView = byId('chat-view');
const kbView = byId('kb-view');

// The side panel: beside the page on wide screens, a drawer over it on narrow ones -----------------------------
const narrow = window.matchMedia('(max-width: 899px)');
const menuButton = byId('menu-button');
const backdrop = byId('drawer-backdrop');

function activeDrawer() {
  return kbView.hidden ? byId('chat-sidebar') : byId('kb-sidebar');
}

/** Opens or closes the drawer; `returnFocus`: a closed drawer gives the focus back to the menu button. */
function setDrawer(open, { returnFocus = false } = {}) {
  const wasOpen = document.body.classList.contains('drawer-open');
  document.body.classList.toggle('drawer-open', open && narrow.matches);
  menuButton.setAttribute('aria-expanded', String(open && narrow.matches));
  backdrop.hidden = !(open && narrow.matches);
  for (const drawer of document.querySelectorAll('.drawer')) {
    // A closed drawer is out of the tab order and of what a screen reader reads.
    drawer.inert = narrow.matches && !(open && drawer === activeDrawer());
  }
  // The opened drawer takes the focus (it is visible at once: styles.css delays only its hiding).
  if (open && narrow.matches) activeDrawer().querySelector('button, input, a')?.focus();
  else if (wasOpen && returnFocus) menuButton.focus();
}

const closeDrawer = () => setDrawer(false);
menuButton.addEventListener('click', () =>
  setDrawer(!document.body.classList.contains('drawer-open'), { returnFocus: true }),
);
backdrop.addEventListener('click', () => setDrawer(false, { returnFocus: true }));
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && document.body.classList.contains('drawer-open')) setDrawer(false, { returnFocus: true });
});

// The skip link: past the header and the side panel to the question box (or to the knowledge-base page). The
// address's hash is the page's route, so the link moves the focus itself.
byId('skip-link').addEventListener('click', (event) => {
  event.preventDefault();
  const target = kbView.hidden ? byId('question') : byId('kb-detail');
  if (!kbView.hidden) target.tabIndex = -1;
  target.focus();
});
narrow.addEventListener('change', closeDrawer);

// The theme: as the system, light or dark (the switch cycles them; remembered in this browser) ----------------
const THEME = 'ragline.theme';
const THEMES = ['system', 'light', 'dark'];
const themeButton = byId('theme-button');
const systemDark = window.matchMedia('(prefers-color-scheme: dark)');
const THEME_LABELS = { system: 'theme.system', light: 'theme.light', dark: 'theme.dark' };

function applyTheme() {
  let theme = localStorage.getItem(THEME) || 'system';
  if (!THEMES.includes(theme)) theme = 'system';
  const root = document.documentElement;
  if (theme === 'system') delete root.dataset.theme;
  else root.dataset.theme = theme;
  // The scheme in effect, for tests and for code that draws in colour.
  root.dataset.scheme = theme === 'system' ? (systemDark.matches ? 'dark' : 'light') : theme;
  themeButton.dataset.theme = theme;
  themeButton.setAttribute('aria-label', t(THEME_LABELS[theme]));
  themeButton.title = t(THEME_LABELS[theme]);
}

themeButton.addEventListener('click', () => {
  const current = themeButton.dataset.theme || 'system';
  localStorage.setItem(THEME, THEMES[(THEMES.indexOf(current) + 1) % THEMES.length]);
  applyTheme();
});
systemDark.addEventListener('change', applyTheme);
applyTheme();

// The answering model, in the header ----------------------------------------------------------------------------
const modelBadge = byId('model-badge');
let models = [];

function showModel(modelId) {
  const model = models.find((m) => m.id === modelId) || models.find((m) => m.type === 'KnowledgeQA' && m.is_default);
  if (!model && !modelId) return;
  const name = model ? model.name : modelId;
  modelBadge.textContent = model && model.kind === 'extractive' ? t('model.extractive') : name;
  modelBadge.title = t('model.from', { model: model ? `${model.name} — ${describeModel(model)}` : modelId });
  modelBadge.setAttribute('aria-label', t('model.badge', { model: modelBadge.textContent }));
  modelBadge.dataset.kind = model ? model.kind : '';
  modelBadge.hidden = false;
}

async function loadModels() {
  try {
    models = await api('GET', '/api/v1/models');
    chat.setModels(models);
    showModel('');
  } catch {
    // The banner (unreachable) or the key dialog (refused) says what is wrong.
  }
}

setUpLightbox();
const viewer = new SourceViewer();
const chat = new ChatPage({ openSource: (citation) => viewer.open(citation), onModel: showModel, closeDrawer });
const knowledge = new KnowledgePage({ openSource: (citation) => viewer.open(citation), closeDrawer });

// Errors that say what to do -------------------------------------------------------------------------------------
const globalError = byId('global-error');
const globalErrorText = byId('global-error-text');
onConnection((error) => {
  if (!error) {
    globalError.hidden = true;
    return;
  }
  const where = settings.apiBase || t('error.this_server');
  globalErrorText.textContent = t('error.unreachable', { where });
  globalError.hidden = false;
});
byId('global-error-settings').addEventListener('click', () => openSettings());
byId('global-error-retry').addEventListener('click', () => route(true));

// The API key ------------------------------------------------------------------------------------------------
const keyDialog = byId('key-dialog');
const keyForm = byId('key-form');
const keyInput = byId('key-input');
const keyMessage = byId('key-message');
let keyPrompt = null;

function askForKey(message = '') {
  // Several calls refused at once each ask: the first one's message stays.
  if (message || !keyPrompt) {
    keyMessage.textContent = message;
    keyMessage.hidden = !message;
  }
  if (keyPrompt) return keyPrompt;
  keyPrompt = new Promise((resolve) => {
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
    for (const dialog of document.querySelectorAll('dialog[open]')) if (dialog !== keyDialog) dialog.close();
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
  askForKey(hadKey ? t('key.refused') : '').then(
    () => route(true),
  );
});

// Settings ----------------------------------------------------------------------------------------------------
const settingsDialog = byId('settings-dialog');
const apiBaseInput = byId('api-base');
const streamBaseInput = byId('stream-base');

function openSettings() {
  apiBaseInput.value = settings.apiBase;
  streamBaseInput.value = settings.streamBase;
  byId('key-state').textContent = settings.apiKey ? t('key.stored') : t('key.none');
  settingsDialog.showModal();
  apiBaseInput.focus();
}

byId('settings-button').addEventListener('click', openSettings);
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
  if (parts[0] === 'kb') return { page: 'kb', kbId: parts[1] || null, sub: parts[2] || '' };
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
  closeDrawer();
  if (force || !models.length) loadModels();
  if (where.page === 'kb') {
    chat.leave();
    await knowledge.show(where.kbId, where.sub);
  } else {
    await chat.show(where.sessionId, { force });
  }
}

window.addEventListener('hashchange', () => route());
route();
