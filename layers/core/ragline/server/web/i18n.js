// The page's languages: every string it shows comes from one catalogue per language (locales/en-US.js,
// locales/zh-CN.js). The language is the one chosen in the header (kept in this browser), else the browser's
// first language the page has, else English. Switching reloads the page, so nothing is left in the old one.

import enUS from './locales/en-US.js';
import zhCN from './locales/zh-CN.js';

export const CATALOGUES = { 'en-US': enUS, 'zh-CN': zhCN };
export const LANGUAGES = [
  ['en-US', 'English'],
  ['zh-CN', '中文'],
];
const STORE = 'ragline.locale';

function chosen() {
  try {
    const kept = localStorage.getItem(STORE);
    if (kept && CATALOGUES[kept]) return kept;
  } catch {
    // No storage: the browser's language decides.
  }
  for (const language of navigator.languages || [navigator.language || '']) {
    const lower = String(language).toLowerCase();
    if (lower.startsWith('zh')) return 'zh-CN';
    if (lower.startsWith('en')) return 'en-US';
  }
  return 'en-US';
}

export const locale = chosen();
const catalogue = CATALOGUES[locale];

/**
 * The string `key` in the page's language, with `{name}` replaced by params.name. A key missing from the
 * catalogue shows as the key itself in brackets (the browser tests fail on it), never as English.
 */
export function t(key, params = {}) {
  let text = catalogue[key];
  if (text === undefined) {
    console.error(`i18n: no ${locale} string for ${key}`);
    return `[${key}]`;
  }
  if (Array.isArray(text)) text = text[params.n === 1 ? 0 : 1];
  return text.replace(/\{(\w+)\}/g, (m, name) => (params[name] === undefined ? m : String(params[name])));
}

/** Whether the catalogue has `key` (a server's code the page may name in its language, or show as it is). */
export function has(key) {
  return catalogue[key] !== undefined;
}

/** A server's code (an intent, a search source) in the page's language, else as the server wrote it. */
export function code(prefix, value) {
  return has(`${prefix}.${value}`) ? t(`${prefix}.${value}`) : value;
}

/** Remembers the language and reloads the page in it. */
export function setLocale(next) {
  if (!CATALOGUES[next] || next === locale) return;
  localStorage.setItem(STORE, next);
  window.location.reload();
}

/** The page's own HTML in the language: data-i18n (text) and data-i18n-<attribute> (an attribute's value). */
export function translatePage(root = document) {
  document.documentElement.lang = locale;
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const name of ['aria-label', 'placeholder', 'title']) {
    const attribute = `data-i18n-${name}`;
    for (const el of root.querySelectorAll(`[${attribute}]`)) el.setAttribute(name, t(el.getAttribute(attribute)));
  }
}
