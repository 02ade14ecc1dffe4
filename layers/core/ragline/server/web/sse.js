// Server-sent events over fetch().
//
// EventSource cannot send headers, and the API key must travel as X-API-Key, never in a URL. So the page
// reads the SSE response body itself: fetch() with the X-API-Key header, a ReadableStream reader, and the
// parser below (the event-stream format of the HTML standard). On a dropped connection, or a response that
// ends before the turn does (stream_reader returns before its Lambda time limit), it reconnects with the
// `Last-Event-ID` header set to the last `id:` received, so the server sends the events after it: nothing
// is lost or repeated. The same code reads the embedded server and stream_reader's function URL (whose
// CORS allows x-api-key and last-event-id).

import { ApiError, authHeaders, errorFrom, networkError } from './api.js';
import { t } from './i18n.js';

/** A stream ends after one of these (SSE contract, SPEC §4). */
export const TERMINAL = new Set(['complete', 'error', 'stop']);

/** Incremental event-stream parser: push() text as it arrives, get back the events it completes. */
export class SSEParser {
  constructor() {
    this.buffer = '';
    this.dataLines = [];
    this.eventType = '';
    this.lastEventId = '';
  }

  push(text) {
    this.buffer += text;
    const events = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i += 1) {
      const ch = this.buffer[i];
      if (ch !== '\n' && ch !== '\r') continue;
      // A CR at the very end may be the first half of a CRLF split across two chunks: wait for more.
      if (ch === '\r' && i === this.buffer.length - 1) break;
      const line = this.buffer.slice(start, i);
      if (ch === '\r' && this.buffer[i + 1] === '\n') i += 1;
      start = i + 1;
      const event = this.line(line);
      if (event) events.push(event);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  line(line) {
    if (line === '') {
      if (this.dataLines.length === 0) {
        this.eventType = '';
        return null;
      }
      const event = { id: this.lastEventId, event: this.eventType || 'message', data: this.dataLines.join('\n') };
      this.dataLines = [];
      this.eventType = '';
      return event;
    }
    if (line.startsWith(':')) return null; // a comment (`: ping`)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventType = value;
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    return null;
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const backoff = (attempt) => Math.min(5000, 250 * 2 ** (attempt - 1));

/**
 * Follows a turn's stream until a terminal frame: onFrame(frame, seq) for every `data:` JSON frame.
 * lastEventId: resume after that seq (null: from the start). Resolves {ended, lastEventId}; ended is the
 * terminal response_type, or 'aborted' when signal aborts. Rejects with an ApiError for an HTTP error
 * (401, 404, ...) or when reconnecting keeps failing.
 */
export async function followStream(url, { lastEventId = null, onFrame, onStatus = () => {}, signal, maxRetries = 8 }) {
  let last = lastEventId === null || lastEventId === undefined ? '' : String(lastEventId);
  let failures = 0;
  const aborted = () => ({ ended: 'aborted', lastEventId: last });
  for (;;) {
    if (signal?.aborted) return aborted();
    const headers = authHeaders({ Accept: 'text/event-stream' });
    if (last !== '') headers['Last-Event-ID'] = last;
    let response;
    try {
      response = await fetch(url, { headers, signal, cache: 'no-store' });
    } catch (err) {
      if (signal?.aborted) return aborted();
      failures += 1;
      if (failures > maxRetries) throw networkError(url, err);
      onStatus('reconnecting');
      await sleep(backoff(failures), signal);
      continue;
    }
    if (!response.ok) {
      if (response.status >= 500 && failures < maxRetries) {
        failures += 1;
        onStatus('reconnecting');
        await sleep(backoff(failures), signal);
        continue;
      }
      throw await errorFrom(response);
    }
    // 204: the stream had already ended at `last` (the server says so instead of pinging forever).
    if (response.status === 204) return { ended: 'ended', lastEventId: last };
    onStatus('streaming');
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SSEParser();
    parser.lastEventId = last;
    let terminal = '';
    try {
      while (!terminal) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch {
          if (signal?.aborted) return aborted();
          break; // the connection dropped mid-stream: reconnect below with Last-Event-ID
        }
        if (chunk.done) break;
        for (const event of parser.push(chunk.value)) {
          last = event.id;
          let frame;
          try {
            frame = JSON.parse(event.data);
          } catch {
            continue;
          }
          failures = 0;
          onFrame(frame, last === '' ? null : Number(last));
          if (TERMINAL.has(frame.response_type)) {
            terminal = frame.response_type;
            break;
          }
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
    if (terminal) return { ended: terminal, lastEventId: last };
    if (signal?.aborted) return aborted();
    failures += 1;
    if (failures > maxRetries) throw new ApiError(0, 'network_error', t('error.stream'));
    onStatus('reconnecting');
    await sleep(backoff(failures), signal);
  }
}
