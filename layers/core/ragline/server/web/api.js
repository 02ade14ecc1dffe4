// Settings kept in localStorage (API key, API base URL, stream URL) and the JSON API client.
//
// The API key is typed once into the page and kept in this browser's localStorage; it is sent as the
// X-API-Key header and never put in a URL (URLs end up in access logs and browser history).

import { t } from './i18n.js';

const STORE = { apiKey: 'ragline.apiKey', apiBase: 'ragline.apiBase', streamBase: 'ragline.streamBase' };

function read(name) {
  try {
    return localStorage.getItem(name) || '';
  } catch {
    return '';
  }
}

function write(name, value) {
  if (value) localStorage.setItem(name, value);
  else localStorage.removeItem(name);
}

const base = (url) => (url || '').trim().replace(/\/+$/, '');

export const settings = {
  get apiKey() {
    return read(STORE.apiKey);
  },
  set apiKey(value) {
    write(STORE.apiKey, (value || '').trim());
  },
  /** Where the JSON API is: empty for this page's own server; on AWS the stack's HttpApiUrl. */
  get apiBase() {
    return base(read(STORE.apiBase));
  },
  set apiBase(value) {
    write(STORE.apiBase, base(value));
  },
  /** Where streams are read: empty for the API base; on AWS stream_reader's function URL. */
  get streamBase() {
    return base(read(STORE.streamBase));
  },
  set streamBase(value) {
    write(STORE.streamBase, base(value));
  },
};

export function apiUrl(path) {
  return settings.apiBase + path;
}

/** A stream's URL: an absolute `stream_url` (AWS returns stream_reader's) as it is, a path on the stream base. */
export function streamUrl(path) {
  if (/^https?:\/\//i.test(path)) return path;
  return (settings.streamBase || settings.apiBase) + path;
}

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field || '';
  }
}

let unauthorized = () => {};
let connection = () => {};

/** Called when the server answers 401: the page asks for the key again. */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** Called with (error) when the API cannot be reached, and with (null) once a call gets through again. */
export function onConnection(handler) {
  connection = handler;
}

export function authHeaders(extra = {}) {
  return { 'X-API-Key': settings.apiKey, ...extra };
}

function errorFromBody(status, statusText, body) {
  const error = (body && body.error) || {};
  if (status === 401) unauthorized();
  // `type` is ragline's error type (`not_found`, `invalid_field`, …); `code` is WeKnora's number.
  const type = error.type || (typeof error.code === 'string' ? error.code : '') || 'http_error';
  return new ApiError(status, type, error.message || (body && body.message) || `${status} ${statusText}`.trim(), error.field);
}

/** An ApiError from a failed fetch Response (`{"success": false, "error": {"code", "type", "message", "field"}}`). */
export async function errorFrom(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return errorFromBody(response.status, response.statusText, body);
}

export function networkError(url, cause) {
  const where = url.startsWith('http') ? new URL(url).origin : t('the_server');
  const error = new ApiError(0, 'network_error', t('error.network', { where, cause: cause && cause.message ? cause.message : cause }));
  error.where = where;
  return error;
}

/**
 * A JSON API call; resolves with the reply's `data` (every reply is WeKnora's `{"success": true, "data"}`).
 * apiReply() resolves with the whole reply, for the `total` / `page` of a paged list.
 */
export async function api(method, path, body, options = {}) {
  const reply = await apiReply(method, path, body, options);
  return reply && typeof reply === 'object' && 'success' in reply ? reply.data : reply;
}

export async function apiReply(method, path, body, { signal } = {}) {
  const url = apiUrl(path);
  const headers = authHeaders({ Accept: 'application/json' });
  const init = { method, headers, signal, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    const error = networkError(url, err);
    connection(error);
    throw error;
  }
  connection(null);
  if (!response.ok) throw await errorFrom(response);
  return response.status === 204 ? null : response.json();
}

/**
 * Uploads one file as multipart `file`. XMLHttpRequest, not fetch: only it reports upload progress.
 * onProgress({phase: 'upload', loaded, total}) while sending, then onProgress({phase: 'indexing'}) until the
 * server has stored its chunks (the reply: status pending while the vectors are computed in the background,
 * which the documents list follows).
 */
export function uploadFile(kbId, file, onProgress = () => {}) {
  const url = apiUrl(`/api/v1/knowledge-bases/${encodeURIComponent(kbId)}/documents`);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.setRequestHeader('X-API-Key', settings.apiKey);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (event) => {
      onProgress({ phase: 'upload', loaded: event.loaded, total: event.lengthComputable ? event.total : file.size });
    });
    xhr.upload.addEventListener('load', () => onProgress({ phase: 'indexing' }));
    xhr.addEventListener('load', () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body && 'success' in body ? body.data : body);
      else reject(errorFromBody(xhr.status, xhr.statusText, body));
    });
    xhr.addEventListener('error', () => reject(networkError(url, 'network error')));
    xhr.addEventListener('abort', () => reject(new ApiError(0, 'aborted', t('upload.cancelled'))));
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
}
