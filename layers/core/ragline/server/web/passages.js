// Sentences and terms of a passage: the sentence a claim comes from (the viewer highlights it), the sentence that
// best matches a search query and the query's terms in it (the search page shows them), and the same highlight
// laid over a passage already rendered as Markdown.
//
// Terms are words of three letters or more, lowercased; Chinese text (no spaces between words) is read as its
// overlapping pairs of characters, as the server's keyword search reads it.

import { h } from './dom.js';

const SENTENCE = /[^.!?。！？；\n]+(?:[.!?。！？；]+["”’)\]]*|\n|$)/g;
const WORD = /[\p{L}\p{N}]+/gu;
const HAN = /[\u3400-\u9fff]/;

/** The terms of a text: its words of 3+ letters, lowercased, and the pairs of characters of its Chinese. */
export function termsOf(text) {
  const terms = new Set();
  for (const [word] of String(text || '').toLowerCase().matchAll(WORD)) {
    if (HAN.test(word)) {
      for (let i = 0; i + 1 < word.length; i += 1) terms.add(word.slice(i, i + 2));
    } else if (word.length > 2) {
      terms.add(word);
    }
  }
  return terms;
}

const squash = (text) => text.replace(/\s+/g, ' ').trim();

/** Each sentence of `content` as [start, end) without its surrounding spaces. */
function sentenceRanges(content) {
  const ranges = [];
  for (const match of content.matchAll(SENTENCE)) {
    const lead = match[0].length - match[0].trimStart().length;
    const range = [match.index + lead, match.index + match[0].trimEnd().length];
    if (range[1] > range[0]) ranges.push(range);
  }
  return ranges;
}

/**
 * The [start, end) range of `content` to highlight for `claim`: the sentence that holds the claim where the
 * chunk holds it (whitespace aside; the claim itself when it spans sentences), else the chunk's sentence sharing
 * the most words with it; null when none shares any.
 */
export function highlightRange(content, claim) {
  const wanted = squash(claim || '');
  if (!wanted || !content) return null;
  // Exact: walk the chunk's characters, matching the claim with runs of whitespace equal.
  const pattern = wanted.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+');
  const exact = new RegExp(pattern).exec(content);
  if (exact) {
    // A quoted part of a sentence ("1849") is shown in the sentence it was taken from.
    const [start, end] = [exact.index, exact.index + exact[0].length];
    for (const [from, to] of sentenceRanges(content)) if (from <= start && end <= to) return [from, to];
    return [start, end];
  }
  const claimTerms = termsOf(wanted);
  if (!claimTerms.size) return null;
  let best = null;
  let bestScore = 0;
  for (const range of sentenceRanges(content)) {
    const terms = termsOf(content.slice(range[0], range[1]));
    let shared = 0;
    for (const term of terms) if (claimTerms.has(term)) shared += 1;
    const score = shared / Math.sqrt(claimTerms.size * Math.max(terms.size, 1));
    if (shared && score > bestScore) {
      bestScore = score;
      best = range;
    }
  }
  return best;
}

/** Does a word of a passage match a query term? The same word, or one of the term's forms (brew, brewing). */
function wordMatches(word, terms) {
  if (terms.has(word)) return true;
  for (const term of terms) {
    if (HAN.test(term)) continue;
    const [shorter, longer] = term.length <= word.length ? [term, word] : [word, term];
    if (shorter.length >= 4 && longer.startsWith(shorter) && longer.length - shorter.length <= 3) return true;
  }
  return false;
}

/** The [start, end) ranges of `text` that are terms of `query` (adjacent ones merged), in order. */
export function termRanges(text, query) {
  const terms = termsOf(query);
  const ranges = [];
  if (!terms.size) return ranges;
  for (const match of String(text).matchAll(WORD)) {
    const word = match[0].toLowerCase();
    if (HAN.test(word)) {
      for (let i = 0; i + 1 < word.length; i += 1) {
        if (terms.has(word.slice(i, i + 2))) ranges.push([match.index + i, match.index + i + 2]);
      }
    } else if (word.length > 2 && wordMatches(word, terms)) {
      ranges.push([match.index, match.index + word.length]);
    }
  }
  const merged = [];
  for (const range of ranges) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}

/** A passage's text without its Markdown marks (headings, list markers, emphasis, code ticks, link targets). */
export function plainText(content) {
  return String(content || '')
    .split('\n')
    .map((line) => line.replace(/^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d{1,9}[.)]\s+)/, ''))
    .join('\n')
    .replace(/!?\[([^\]\n]*)\]\([^)\s]*(?:\s+"[^"]*")?\)/g, '$1')
    .replace(/(\*\*|__|~~|`+)/g, '')
    .replace(/<(?:kb|web)\s[^<>]*\/>/g, '');
}

/**
 * The sentence of `content` that best matches `query` (the most of its distinct terms; of sentences with as many,
 * the longest), as {text, ranges (the query's terms in it), before, after (whether the passage goes on before and
 * after it)}.
 * A passage matched by meaning alone (no term in common) gives its beginning.
 */
export function bestSentence(content, query, limit = 400) {
  const text = plainText(content);
  const terms = termsOf(query);
  let best = null;
  let bestScore = 0;
  for (const [start, end] of sentenceRanges(text)) {
    const sentence = text.slice(start, end);
    const words = termsOf(sentence);
    let found = 0;
    for (const term of terms) if (words.has(term) || (!HAN.test(term) && wordMatches(term, words))) found += 1;
    // The most of the query's terms; among sentences with as many, the longer (a heading repeats a title).
    const score = found && found * 1000 + Math.min(sentence.length, 300);
    if (score > bestScore) {
      bestScore = score;
      best = [start, end];
    }
  }
  const squashed = (from, to) => squash(text.slice(from, to));
  if (!best) {
    const all = squash(text);
    return { text: all.length > limit ? `${all.slice(0, limit)}…` : all, ranges: [], before: false, after: all.length > limit };
  }
  let sentence = squashed(best[0], best[1]);
  if (sentence.length > limit) {
    // A very long sentence is cut around its first matched term.
    const first = termRanges(sentence, query)[0] || [0, 0];
    const from = Math.max(0, first[0] - Math.floor(limit / 3));
    sentence = sentence.slice(from, from + limit);
  }
  return {
    text: sentence,
    ranges: termRanges(sentence, query),
    before: Boolean(text.slice(0, best[0]).trim()),
    after: Boolean(text.slice(best[1]).trim()),
  };
}

/** `text` as nodes, the `ranges` wrapped in <mark class=…>. */
export function marked(text, ranges, className = 'term') {
  const nodes = [];
  let position = 0;
  for (const [start, end] of ranges) {
    if (start > position) nodes.push(text.slice(position, start));
    nodes.push(h('mark', { class: className }, text.slice(start, end)));
    position = end;
  }
  if (position < text.length) nodes.push(text.slice(position));
  return nodes;
}

// The highlight over rendered Markdown ---------------------------------------------------------------------------
const BLOCKS = new Set(['P', 'LI', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'PRE', 'BLOCKQUOTE', 'TD', 'TH', 'TR', 'DIV', 'UL', 'OL', 'TABLE']);

/**
 * The text a rendered passage shows, with a line break between its blocks (so sentences end where a heading or
 * an item does), and where each of its text nodes starts in it. The code blocks' heads (language, Copy) are not
 * the passage's text.
 */
function shownText(root) {
  const parts = [];
  const nodes = [];
  let length = 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.nodeType === Node.ELEMENT_NODE && node.classList.contains('code-head') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      nodes.push({ node, start: length });
      parts.push(node.data);
      length += node.data.length;
    } else if (BLOCKS.has(node.tagName) || node.tagName === 'BR') {
      parts.push('\n');
      length += 1;
    }
  }
  return { text: parts.join(''), nodes };
}

/**
 * Highlights in the rendered passage under `root` the sentence `claim` comes from (highlightRange over the text it
 * shows): the part of each text node in the range is wrapped in <mark class="claim">. Returns the highlighted
 * text, or '' when nothing matched.
 */
export function highlightRendered(root, claim) {
  const { text, nodes } = shownText(root);
  const range = highlightRange(text, claim);
  if (!range) return '';
  const [start, end] = range;
  for (const { node, start: at } of nodes) {
    const from = Math.max(start, at);
    const to = Math.min(end, at + node.data.length);
    if (from >= to) continue;
    // Split off the part in range (splitText keeps the node's place) and wrap it.
    let part = node;
    if (from > at) part = part.splitText(from - at);
    if (to < at + node.data.length) part.splitText(to - from);
    if (!part.data.trim()) continue;
    const mark = h('mark', { class: 'claim' });
    part.replaceWith(mark);
    mark.append(part);
  }
  return squash(text.slice(start, end));
}
