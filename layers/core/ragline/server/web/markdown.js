// A small, safe Markdown renderer for answers: headings, paragraphs, emphasis, code (spans and fenced
// blocks), lists (nested, ordered), block quotes, tables, links and rules.
//
// Safety: it never parses HTML. The output is built with createElement/Text nodes, so every character of
// the source is displayed as text, and links keep only http(s)/mailto URLs. Citation tags the server puts
// in answers (`<kb doc="…" chunk_id="…" kb_id="…" />`, `<web url="…" title="…" />`) are taken out first and
// handed to options.renderCitation, which returns the chip to show; any other tag shows as plain text.

import { copyText, h } from './dom.js';
import { t } from './i18n.js';
import { highlightCode } from './syntax.js';

const CITATION = /<(kb|web)\s+((?:[\w-]+="[^"]*"\s*)*)\/>/g;
const ATTRIBUTE = /([\w-]+)="([^"]*)"/g;
const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'", '&#39;': "'" };
// Placeholders for citations: private-use characters that answers do not contain.
const OPEN = '\uE000';
const CLOSE = '\uE001';
const PLACEHOLDER = /\uE000(\d+)\uE001/g;

const unescapeAttribute = (value) => value.replace(/&(?:amp|lt|gt|quot|#x27|#39);/g, (m) => ENTITIES[m]);

/** `{kind: 'kb', doc, chunkId, kbId}` or `{kind: 'web', url, title}` from a tag's name and attributes. */
export function parseCitation(kind, attributes) {
  const attrs = {};
  for (const [, name, value] of attributes.matchAll(ATTRIBUTE)) attrs[name] = unescapeAttribute(value);
  if (kind === 'web') return { kind, url: attrs.url || '', title: attrs.title || '', raw: '' };
  return { kind, doc: attrs.doc || '', chunkId: attrs.chunk_id || '', kbId: attrs.kb_id || '', raw: '' };
}

/** The citations of a text, in order (what the chips of an answer will be). */
export function citationsOf(text) {
  return [...text.matchAll(CITATION)].map((m) => parseCitation(m[1], m[2]));
}

/** For each citation of a text, in order, the claim it backs: the last sentence of the text before it. */
export function citationClaims(text) {
  const claims = [];
  let position = 0;
  let previous = '';
  for (const match of String(text || '').matchAll(CITATION)) {
    const between = text.slice(position, match.index);
    position = match.index + match[0].length;
    // Consecutive citations back the same claim.
    if (between.trim()) previous = lastSentence(text.slice(0, match.index));
    claims.push(previous);
  }
  return claims;
}

function lastSentence(text) {
  const plain = text.replace(CITATION, ' ').replace(/[*_`#>|]/g, ' ');
  const sentences = plain.split(/(?<=[.!?。！？；])\s+|\n+/);
  for (let i = sentences.length - 1; i >= 0; i -= 1) {
    const sentence = sentences[i].replace(/^\s*(?:[-+]|\d+[.)])\s+/, '').trim().replace(/^…|…$/g, '').trim();
    if (sentence.length >= 3) return sentence;
  }
  return '';
}

/** While an answer streams, a tag may be cut in two: hide a trailing `<kb …` or `<web …` until it closes. */
export function stripPartialTag(text) {
  return text.replace(/<(?:k|kb|w|we|web)(?:\s[^<>]*)?$/, '');
}

/** Is `href` safe to link to? Returns the absolute URL for http(s) and mailto, else ''. */
export function safeUrl(href) {
  try {
    const url = new URL(href, window.location.href);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : '';
  } catch {
    return '';
  }
}

/**
 * A fenced code block: its language and a copy button above it; the block scrolls sideways and takes the
 * keyboard's focus (so the arrows scroll it).
 */
function codeBlock(code, source, language) {
  const copy = h('button', { type: 'button', class: 'ghost small code-copy' }, t('code.copy'));
  copy.addEventListener('click', async () => {
    await copyText(source);
    copy.textContent = t('copied');
    copy.dataset.copied = 'true';
    setTimeout(() => {
      copy.textContent = t('code.copy');
      delete copy.dataset.copied;
    }, 2000);
  });
  return h(
    'div',
    { class: 'code-block' },
    h('div', { class: 'code-head' }, h('span', { class: 'code-lang' }, language || t('code')), copy),
    h('pre', { tabindex: '0' }, code),
  );
}

/**
 * Renders `source` as a DocumentFragment. options.renderCitation(citation) → Node for each citation tag;
 * options.headingOffset moves headings down that many levels.
 */
export function renderMarkdown(source, options = {}) {
  const citations = [];
  const text = String(source || '')
    .replace(/\r\n?/g, '\n')
    .replace(/[\uE000\uE001]/g, '')
    .replace(CITATION, (raw, kind, attributes) => {
      const citation = parseCitation(kind, attributes);
      citation.raw = raw;
      citation.index = citations.length;
      citations.push(citation);
      return `${OPEN}${citations.length - 1}${CLOSE}`;
    });
  const ctx = {
    // Headings moved down this many levels (a passage shown under a dialog's own heading).
    headingOffset: options.headingOffset || 0,
    cite(index) {
      const citation = citations[index];
      const node = citation && options.renderCitation ? options.renderCitation(citation) : null;
      return node || document.createTextNode('');
    },
    // Inside code the tag is shown as written.
    restore: (code) => code.replace(PLACEHOLDER, (m, i) => (citations[Number(i)] ? citations[Number(i)].raw : '')),
  };
  const fragment = document.createDocumentFragment();
  fragment.append(...blocks(text.split('\n'), ctx));
  return fragment;
}

// Blocks ---------------------------------------------------------------------------------------------------
const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const QUOTE = /^ {0,3}> ?/;
const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const TABLE_SEPARATOR = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

const indentOf = (line) => line.match(/^ */)[0].length;

function isTableStart(lines, i) {
  return (
    i + 1 < lines.length && lines[i].includes('|') && lines[i + 1].includes('|') && TABLE_SEPARATOR.test(lines[i + 1])
  );
}

function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    (LIST_ITEM.test(line) && LIST_ITEM.exec(line)[3] !== undefined) ||
    isTableStart(lines, i)
  );
}

function blocks(lines, ctx) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    let m = FENCE.exec(line);
    if (m) {
      const indent = m[1].length;
      const fence = m[2];
      const language = m[3].replace(/[^\w+-]/g, '');
      const body = [];
      i += 1;
      while (i < lines.length && !new RegExp(`^ {0,3}${fence[0]}{${fence.length},}[ \\t]*$`).test(lines[i])) {
        body.push(lines[i].slice(Math.min(indent, indentOf(lines[i]))));
        i += 1;
      }
      i += 1; // the closing fence (or past the end while the answer still streams)
      const source = ctx.restore(body.join('\n'));
      const code = h('code', language ? { class: `language-${language}` } : {}, source);
      out.push(codeBlock(code, source, language));
      // Coloured once highlight.js is loaded (when it is installed); the text stays the same.
      queueMicrotask(() => highlightCode(code, language));
      continue;
    }
    m = HEADING.exec(line);
    if (m) {
      out.push(h(`h${Math.min(6, m[1].length + ctx.headingOffset)}`, {}, inline(m[2] || '', ctx)));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h('hr'));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) {
        body.push(lines[i].replace(QUOTE, ''));
        i += 1;
      }
      out.push(h('blockquote', {}, blocks(body, ctx)));
      continue;
    }
    if (isTableStart(lines, i)) {
      i = table(lines, i, ctx, out);
      continue;
    }
    if (LIST_ITEM.test(line)) {
      i = list(lines, i, ctx, out);
      continue;
    }
    const paragraph = [line.trim()];
    i += 1;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) {
      paragraph.push(lines[i].trim());
      i += 1;
    }
    out.push(h('p', {}, inline(paragraph.join('\n'), ctx)));
  }
  return out;
}

function list(lines, start, ctx, out) {
  const first = LIST_ITEM.exec(lines[start]);
  const baseIndent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const sameList = (m) => m && m[1].length <= baseIndent + 1 && /\d/.test(m[2]) === ordered;
  const items = [];
  let contentIndent = 0;
  let i = start;
  while (i < lines.length) {
    const line = lines[i];
    const m = LIST_ITEM.exec(line);
    if (sameList(m)) {
      items.push({ lines: [m[3] || ''], loose: false });
      contentIndent = m[1].length + m[2].length + 1;
      i += 1;
      continue;
    }
    if (m && m[1].length <= baseIndent + 1) break; // another kind of list starts here
    const item = items[items.length - 1];
    if (!line.trim()) {
      let next = i + 1;
      while (next < lines.length && !lines[next].trim()) next += 1;
      if (next < lines.length && (sameList(LIST_ITEM.exec(lines[next])) || indentOf(lines[next]) > baseIndent + 1)) {
        item.lines.push('');
        item.loose = true;
        i += 1;
        continue;
      }
      break;
    }
    const indent = indentOf(line);
    if (indent > baseIndent + 1) {
      item.lines.push(line.slice(Math.min(indent, contentIndent)));
    } else if (!startsBlock(lines, i)) {
      item.lines.push(line.trim()); // a lazy continuation line
    } else {
      break;
    }
    i += 1;
  }
  const el = h(ordered ? 'ol' : 'ul');
  const startNumber = Number.parseInt(first[2], 10);
  if (ordered && startNumber !== 1) el.setAttribute('start', String(startNumber));
  for (const item of items) {
    const li = h('li');
    for (const child of blocks(item.lines, ctx)) {
      if (!item.loose && child.tagName === 'P') li.append(...child.childNodes);
      else li.append(child);
    }
    el.append(li);
  }
  out.push(el);
  return i;
}

function splitRow(line) {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

function table(lines, start, ctx, out) {
  const header = splitRow(lines[start]);
  const aligns = splitRow(lines[start + 1]).map((cell) => {
    if (cell.startsWith(':') && cell.endsWith(':')) return 'center';
    if (cell.endsWith(':')) return 'right';
    if (cell.startsWith(':')) return 'left';
    return '';
  });
  const cell = (tag, text, index) =>
    h(tag, aligns[index] ? { class: `align-${aligns[index]}` } : {}, inline(text || '', ctx));
  const head = h('thead', {}, h('tr', {}, header.map((text, index) => cell('th', text, index))));
  const body = h('tbody');
  let i = start + 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes('|')) {
    const cells = splitRow(lines[i]);
    body.append(h('tr', {}, header.map((_, index) => cell('td', cells[index], index))));
    i += 1;
  }
  out.push(h('div', { class: 'table-wrap' }, h('table', {}, head, body)));
  return i;
}

// Inline ---------------------------------------------------------------------------------------------------
const INLINE = new RegExp(
  [
    String.raw`(?<escape>\\[\\\x60*_{}\[\]()#+\-.!~|>])`,
    String.raw`(?<cite>\uE000(?<citeIndex>\d+)\uE001)`,
    String.raw`(?<code>(?<ticks>\x60+)(?<codeText>[\s\S]*?[^\x60])\k<ticks>(?!\x60))`,
    String.raw`(?<link>\[(?<linkText>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\((?<href>[^\s()<>]+(?:\([^\s()<>]*\)[^\s()<>]*)*)(?:\s+"(?<linkTitle>[^"\n]*)")?\))`,
    String.raw`(?<strong>(?<strongMark>\*\*|__)(?=\S)(?<strongText>[\s\S]*?\S)\k<strongMark>)`,
    String.raw`(?<del>~~(?=\S)(?<delText>[\s\S]*?\S)~~)`,
    String.raw`(?<em>(?<![\w*\\])(?<emMark>[*_])(?=[^\s*_])(?<emText>[\s\S]*?[^\s\\])\k<emMark>(?![\w*]))`,
    String.raw`(?<url>\bhttps?:\/\/[^\s<>"\uE000]*[^\s<>"\uE000.,;:!?)\]'*_])`,
  ].join('|'),
  'g',
);

function pushText(out, text) {
  const parts = text.split('\n');
  parts.forEach((part, index) => {
    if (index > 0) out.push(h('br'));
    if (part) out.push(document.createTextNode(part));
  });
}

function inline(text, ctx) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) pushText(out, text.slice(last, m.index));
    last = m.index + m[0].length;
    const g = m.groups;
    if (g.escape) {
      out.push(document.createTextNode(g.escape.slice(1)));
    } else if (g.cite) {
      out.push(ctx.cite(Number(g.citeIndex)));
    } else if (g.code) {
      let code = g.codeText;
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
      out.push(h('code', {}, ctx.restore(code)));
    } else if (g.link) {
      const href = safeUrl(g.href);
      const label = inline(g.linkText, ctx);
      out.push(
        href ? h('a', { href, title: g.linkTitle, target: '_blank', rel: 'noopener noreferrer nofollow' }, label) : label,
      );
    } else if (g.strong) {
      out.push(h('strong', {}, inline(g.strongText, ctx)));
    } else if (g.del) {
      out.push(h('del', {}, inline(g.delText, ctx)));
    } else if (g.em) {
      out.push(h('em', {}, inline(g.emText, ctx)));
    } else if (g.url) {
      const href = safeUrl(g.url);
      out.push(href ? h('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow' }, g.url) : g.url);
    }
  }
  if (last < text.length) pushText(out, text.slice(last));
  return out;
}
