// A conversation exported from the page: as Markdown (each question and answer with its time, the answer's
// citations as [n] and its sources listed under it, with the cited passage) or as JSON (the session and its
// messages as the API stores them). Built from the stored messages, not from what the page shows.

import { formatDate } from './dom.js';
import { t } from './i18n.js';

const CITATION = /<(kb|web)\s+((?:[\w-]+="[^"]*"\s*)*)\/>/g;
const ATTRIBUTE = /([\w-]+)="([^"]*)"/g;
const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'", '&#39;': "'" };

function attributes(text) {
  const out = {};
  for (const [, name, value] of text.matchAll(ATTRIBUTE)) out[name] = value.replace(/&(?:amp|lt|gt|quot|#x27|#39);/g, (m) => ENTITIES[m]);
  return out;
}

const squash = (text) => String(text || '').replace(/\s+/g, ' ').trim();
const snippet = (text, n = 200) => (squash(text).length > n ? `${squash(text).slice(0, n)}…` : squash(text));

/** An answer's Markdown with its citations as [n] (one number per source) and the sources it cites, in order. */
export function answerWithSources(content, references = []) {
  const sources = new Map(); // key → {n, title, url, passages: [snippet]}
  const text = String(content || '').replace(CITATION, (tag, kind, attrs) => {
    const a = attributes(attrs);
    const ref = kind === 'kb' ? references.find((r) => r.id === a.chunk_id || (r.sub_chunk_id || []).includes(a.chunk_id)) : null;
    const key = kind === 'web' ? `web:${a.url}` : `doc:${(ref && ref.knowledge_id) || a.doc}`;
    if (!sources.has(key)) {
      const title = kind === 'web' ? a.title || a.url : (ref && ref.knowledge_title) || a.doc || t('source.chip');
      sources.set(key, { n: sources.size + 1, title, url: kind === 'web' ? a.url : '', passages: [] });
    }
    const source = sources.get(key);
    const passage = ref ? snippet(ref.content) : '';
    if (passage && !source.passages.includes(passage)) source.passages.push(passage);
    return `[${source.n}]`;
  });
  return { text: text.replace(/[ \t]+\n/g, '\n').trim(), sources: [...sources.values()] };
}

/** The conversation as Markdown: its title, when and from what it was exported, then every message. */
export function conversationMarkdown(session, messages, { kbNames = [], exportedAt = new Date() } = {}) {
  const lines = [`# ${session.title || t('session.untitled')}`, ''];
  const about = [t('export.exported', { date: formatDate(exportedAt) })];
  if (kbNames.length) about.push(t('session.scope', { names: kbNames.join(', ') }));
  lines.push(`_${about.join(' · ')}_`, '');
  for (const message of messages) {
    const when = formatDate(message.created_at);
    if (message.role === 'user') {
      lines.push(`## ${t('export.question')} · ${when}`, '');
      if (message.content) lines.push(message.content, '');
      if ((message.images || []).length) lines.push(`_${t('export.images', { n: message.images.length })}_`, '');
      continue;
    }
    const heading = [t('export.answer'), formatDate(message.updated_at || message.created_at)];
    if (message.alternative_of) heading.push(t('export.alternative'));
    lines.push(`## ${heading.join(' · ')}`, '');
    const { text, sources } = answerWithSources(message.content, message.knowledge_references || []);
    if (text) lines.push(text, '');
    if (message.stop_reason === 'stopped') lines.push(`_${t('stop.by_user')}_`, '');
    if (message.stop_reason === 'error') lines.push(`_${t('answer.failed')}_`, '');
    if (sources.length) {
      lines.push(`**${t('export.sources')}**`, '');
      for (const source of sources) {
        lines.push(`${source.n}. ${source.title}${source.url ? ` <${source.url}>` : ''}`);
        for (const passage of source.passages) lines.push(`   > ${passage}`);
      }
      lines.push('');
    }
  }
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trim()}\n`;
}

/** The conversation as JSON: the session and its messages as the API returned them. */
export function conversationJson(session, messages, { exportedAt = new Date() } = {}) {
  return `${JSON.stringify({ format: 'ragline.conversation.v1', exported_at: exportedAt.toISOString(), session, messages }, null, 2)}\n`;
}

/** A file name from a title: its letters and digits (any script), dashes between. */
export function fileName(title, extension) {
  const base = String(title || '').normalize('NFKC').replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 80);
  return `${base || 'conversation'}.${extension}`;
}

/** Saves `text` as a file the browser downloads (from a blob: URL, let go afterwards). */
export function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
