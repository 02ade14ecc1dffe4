// Syntax highlighting of code blocks by highlight.js (installed from the npm registry by `make web-vendor` and
// served by this page's server at /vendor/highlight.min.js; never fetched from anywhere else). It is loaded the
// first time a code block is shown; without it (not installed, failed to load) code shows as plain text.
//
// highlight.js gives HTML; it is never inserted as HTML. The string is parsed into an inert document (DOMParser
// runs no script and loads nothing) and only its text and the <span class="hljs-…"> around it are copied into the
// page, and only when the copied text is the code itself.

const LIBRARY = '/vendor/highlight.min.js';
let library = null;

function load() {
  if (!library) library = import(LIBRARY).then((module) => module.default || null, () => null);
  return library;
}

const TOKEN_CLASS = /^(?:hljs-[\w-]+|[\w-]+_)$/;

/** Copies `from`'s text and its spans' highlight.js classes into `to` (anything else is dropped, its text kept). */
function copyTokens(from, to) {
  for (const node of from.childNodes) {
    if (node.nodeType === Node.TEXT_NODE) {
      to.append(node.data);
    } else if (node.nodeType === Node.ELEMENT_NODE) {
      if (node.tagName !== 'SPAN') {
        copyTokens(node, to);
        continue;
      }
      const span = document.createElement('span');
      const classes = [...node.classList].filter((name) => TOKEN_CLASS.test(name));
      if (classes.length) span.className = classes.join(' ');
      copyTokens(node, span);
      to.append(span);
    }
  }
}

/**
 * Highlights the <code> element `code` (its text, in `language` when highlight.js knows it, else the language it
 * guesses). Resolves the language used, or '' when it was left as it is.
 */
export async function highlightCode(code, language = '') {
  const hljs = await load();
  if (!hljs || !code.isConnected) return '';
  const source = code.textContent;
  let result;
  try {
    result = language && hljs.getLanguage(language)
      ? hljs.highlight(source, { language, ignoreIllegals: true })
      : hljs.highlightAuto(source);
  } catch {
    return '';
  }
  if (!result || !result.value || code.textContent !== source) return '';
  const parsed = new DOMParser().parseFromString(`<code>${result.value}</code>`, 'text/html').body.firstChild;
  const tokens = document.createElement('code');
  if (parsed) copyTokens(parsed, tokens);
  if (tokens.textContent !== source) return '';
  code.replaceChildren(...tokens.childNodes);
  code.classList.add('hljs');
  code.dataset.highlighted = result.language || language || 'plaintext';
  return code.dataset.highlighted;
}
