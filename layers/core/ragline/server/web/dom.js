// Building DOM nodes without HTML strings: every text goes in as a Text node, so nothing is ever parsed as markup.

import { locale, t } from './i18n.js';

/**
 * h('a', {class: 'x', href: url, dataset: {id: '1'}, onclick: fn}, 'text', child) → an element.
 * Attributes that are null, undefined or false are left out; true gives an empty attribute.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el;
}

export function formatDate(value) {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? '' : date.toLocaleString(locale);
}

/** A time as the page shows it beside a message: "14:05" today, "Dec 6, 14:05" another day (in the page's locale). */
export function shortTime(value) {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return '';
  const today = new Date().toDateString() === date.toDateString();
  const options = today ? { hour: '2-digit', minute: '2-digit' } : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' };
  if (date.getFullYear() !== new Date().getFullYear()) options.year = 'numeric';
  return date.toLocaleString(locale, options);
}

/** "1 document", "3 documents" ("3 个文档"): the catalogue's `n.<noun>` in the page's language. */
export function count(n, noun) {
  return t(`n.${noun}`, { n });
}

/** "2.4 MB", "812 B". */
export function formatBytes(n) {
  if (!n) return '—';
  const units = ['B', 'KB', 'MB', 'GB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit ? value.toFixed(value < 10 ? 1 : 0) : value} ${units[unit]}`;
}

/** The first words of a question, cut at a word with "…" (the provisional title the server sets too). */
export function provisionalTitle(text, words = 8) {
  const all = String(text || '').split(/\s+/).filter(Boolean);
  const title = all.slice(0, words).join(' ').replace(/[\s"'“”‘’`*.。!！?？:：;；,，]+$/, '');
  return (title.charAt(0).toUpperCase() + title.slice(1) + (all.length > words ? '…' : '')) || t('session.new');
}

/**
 * Asks in the page's confirm dialog (never window.confirm, which blocks the page): resolves true when the
 * action was confirmed.
 */
export function confirmAction(message, action = t('delete')) {
  const dialog = byId('confirm-dialog');
  byId('confirm-message').textContent = message;
  const ok = byId('confirm-ok');
  ok.textContent = action;
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.removeEventListener('close', onClose);
      ok.removeEventListener('click', onOk);
      if (dialog.open) dialog.close();
      resolve(value);
    };
    const onOk = (event) => {
      event.preventDefault();
      done(true);
    };
    const onClose = () => done(false);
    ok.addEventListener('click', onOk);
    dialog.addEventListener('close', onClose);
    dialog.showModal();
    byId('confirm-cancel').focus();
  });
}

/** A short message at the bottom of the screen, with an optional action (Undo); resolves how it ended. */
export function toast(message, { action = '', timeout = 6000 } = {}) {
  const region = byId('toasts');
  return new Promise((resolve) => {
    let timer = null;
    const el = h('div', { class: 'toast', role: 'status' }, h('span', { class: 'toast-text' }, message));
    const end = (how) => {
      clearTimeout(timer);
      el.remove();
      resolve(how);
    };
    if (action) el.append(h('button', { type: 'button', class: 'toast-action', onclick: () => end('action') }, action));
    el.append(h('button', { type: 'button', class: 'ghost toast-close', 'aria-label': t('dismiss'), onclick: () => end('dismissed') }, '✕'));
    region.append(el);
    timer = setTimeout(() => end('timeout'), timeout);
  });
}

/** Copies text to the clipboard (the Clipboard API, else a hidden textarea and the copy command). */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h('textarea', { class: 'offscreen', 'aria-hidden': 'true' });
    area.value = text;
    document.body.append(area);
    area.select();
    const done = document.execCommand('copy');
    area.remove();
    return done;
  }
}
