// Images in the page: the pictures attached to a question (chosen, pasted or dropped onto the question box),
// and stored images shown by their handle (a question's images, the pictures references and passages carry).
//
// A stored image is read through GET /api/v1/images?url=<handle> with the API key as a header — an <img src>
// could not send it, and the key is never put in a URL — and shown from a blob: URL of the bytes received.
// Attachments are checked here as the server checks them (PNG, JPEG, WebP or GIF by their first bytes, at most
// 5 MB each, at most 4 per question) so a refusal is said at once; the server's own refusal is shown as well.

import { apiUrl, authHeaders, errorFrom } from './api.js';
import { formatBytes, h } from './dom.js';
import { t } from './i18n.js';

export const MAX_IMAGES = 4;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

/** The media type by the file's first bytes (as the server reads it), or '' for anything else. */
export function sniffImage(bytes) {
  const b = bytes;
  const starts = (...magic) => magic.every((value, i) => b[i] === value);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) return 'image/gif';
  if (starts(0x52, 0x49, 0x46, 0x46) && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return 'image/webp';
  return '';
}

// Stored images ------------------------------------------------------------------------------------------------
const loaded = new Map(); // handle → Promise<blob: URL>

/** A blob: URL of the stored image `handle` (read once per page; the promise rejects with an ApiError). */
export function storedImage(handle) {
  if (!loaded.has(handle)) {
    const request = (async () => {
      const response = await fetch(apiUrl(`/api/v1/images?url=${encodeURIComponent(handle)}`), { headers: authHeaders() });
      if (!response.ok) throw await errorFrom(response);
      return URL.createObjectURL(await response.blob());
    })();
    loaded.set(handle, request);
    request.catch(() => loaded.delete(handle)); // a failure is tried again the next time it is shown
  }
  return loaded.get(handle);
}

/** An <img> of the stored image `handle`: empty until its bytes arrive, marked data-state loaded or failed. */
export function storedThumbnail(handle, alt, className = 'thumb') {
  const img = h('img', { class: className, alt, dataset: { handle, state: 'loading' }, loading: 'lazy', decoding: 'async' });
  storedImage(handle).then(
    (src) => {
      img.addEventListener('load', () => (img.dataset.state = 'loaded'), { once: true });
      img.src = src;
    },
    (err) => {
      img.dataset.state = 'failed';
      img.title = t('image.failed', { error: err.message });
    },
  );
  return img;
}

// The lightbox ---------------------------------------------------------------------------------------------------
/**
 * An image that opens in the lightbox: the <img> inside a button (a keyboard can open it too), named after the
 * picture. `img`: an <img> (a stored thumbnail, a preview).
 */
export function zoomable(img) {
  return h('button', { type: 'button', class: 'zoom', 'aria-label': t('image.enlarge', { alt: img.alt }), title: t('image.enlarge', { alt: img.alt }), onclick: (event) => openLightbox(img, event.currentTarget) }, img);
}

/** A stored image's thumbnail that opens in the lightbox. */
export function zoomableThumbnail(handle, alt, className = 'thumb') {
  return zoomable(storedThumbnail(handle, alt, className));
}

/** Shows `img` at full size in the lightbox dialog, its name under it; closing it gives the focus back to `opener`. */
export function openLightbox(img, opener = null) {
  const dialog = document.getElementById('lightbox');
  const full = document.getElementById('lightbox-image');
  const caption = document.getElementById('lightbox-caption');
  if (!dialog || !img.src) return;
  full.src = img.src;
  full.alt = img.alt;
  caption.textContent = img.alt;
  dialog.dataset.handle = img.dataset.handle || '';
  dialog.addEventListener('close', () => opener?.focus(), { once: true });
  dialog.showModal();
  document.getElementById('lightbox-close').focus();
}

/** Wires the lightbox's close button and its backdrop (Escape closes any dialog). */
export function setUpLightbox() {
  const dialog = document.getElementById('lightbox');
  document.getElementById('lightbox-close').addEventListener('click', () => dialog.close());
  dialog.addEventListener('click', (event) => {
    if (event.target === dialog) dialog.close();
  });
  dialog.addEventListener('close', () => {
    document.getElementById('lightbox-image').removeAttribute('src');
  });
}

/** The image handles a reference or chunk carries: its image_info list, else its image_url; [] for text. */
export function imageHandles(item) {
  if (!item) return [];
  const handles = [];
  let info = item.image_info || (item.metadata && item.metadata.image_info) || (item.chunk_metadata && item.chunk_metadata.image_info) || '';
  if (typeof info === 'string' && info) {
    try {
      info = JSON.parse(info);
    } catch {
      info = [];
    }
  }
  for (const entry of Array.isArray(info) ? info : []) if (entry && typeof entry.url === 'string') handles.push(entry.url);
  const meta = item.chunk_metadata || item.metadata || {};
  if (!handles.length && typeof meta.image_url === 'string' && meta.image_url) handles.push(meta.image_url);
  return [...new Set(handles.filter((url) => url.startsWith('resource://images/')))];
}

// Attachments --------------------------------------------------------------------------------------------------
function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.addEventListener('load', () => resolve(reader.result));
    reader.addEventListener('error', () => reject(reader.error));
    reader.readAsDataURL(file);
  });
}

/**
 * The images attached to the next question: a button opening the file picker, paste into the question box and
 * drop onto the composer; a thumbnail of each with a remove button. onError(message) says why a file was
 * refused ('' clears it).
 */
export class Attachments {
  constructor({ form, input, button, tray, onError = () => {} }) {
    this.form = form;
    this.input = input;
    this.tray = tray;
    this.onError = onError;
    this.items = []; // {file, preview (blob: URL), type}
    button.addEventListener('click', () => input.click());
    input.addEventListener('change', () => {
      this.add([...input.files]);
      input.value = ''; // the same file may be chosen again after it was removed
    });
    form.addEventListener('paste', (event) => {
      const files = [...(event.clipboardData ? event.clipboardData.files : [])];
      if (!files.length) return; // text is pasted as text
      event.preventDefault();
      this.add(files);
    });
    const hasFiles = (event) => event.dataTransfer && [...event.dataTransfer.types].includes('Files');
    form.addEventListener('dragover', (event) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
      form.classList.add('dragging');
    });
    form.addEventListener('dragleave', (event) => {
      if (!form.contains(event.relatedTarget)) form.classList.remove('dragging');
    });
    form.addEventListener('drop', (event) => {
      form.classList.remove('dragging');
      if (!hasFiles(event)) return;
      event.preventDefault();
      this.add([...event.dataTransfer.files]);
    });
  }

  get count() {
    return this.items.length;
  }

  /** Checks `files` (each by its bytes) and keeps the good ones; the first refusal is reported. */
  async add(files) {
    const refusals = [];
    for (const file of files) {
      const name = file.name || t('image.pasted');
      if (this.items.length >= MAX_IMAGES) {
        refusals.push(t('image.too_many', { max: MAX_IMAGES, name }));
        break;
      }
      if (file.size > MAX_IMAGE_BYTES) {
        refusals.push(t('image.too_big', { name, size: formatBytes(file.size) }));
        continue;
      }
      const type = sniffImage(new Uint8Array(await file.slice(0, 12).arrayBuffer()));
      if (!type) {
        refusals.push(t('image.not_image', { name }));
        continue;
      }
      if (this.items.length >= MAX_IMAGES) {
        refusals.push(t('image.too_many', { max: MAX_IMAGES, name }));
        break;
      }
      this.items.push({ file, type, preview: URL.createObjectURL(file) });
    }
    this.onError(refusals.join(' '));
    this.render();
  }

  remove(index) {
    const [item] = this.items.splice(index, 1);
    if (item) URL.revokeObjectURL(item.preview);
    this.onError('');
    this.render();
  }

  /** Empties the tray; the previews in `keep` live on (a question shows them until its stored images load). */
  clear({ keep = [] } = {}) {
    for (const item of this.items) if (!keep.includes(item.preview)) URL.revokeObjectURL(item.preview);
    this.items = [];
    this.render();
  }

  /** The previews (blob: URLs) of the attached images, to show on the question until its handles are known. */
  previews() {
    return this.items.map((item) => item.preview);
  }

  /** The request's `images`: [{data: "data:image/…;base64,…"}] in order. */
  async payload() {
    return Promise.all(this.items.map(async (item) => ({ data: await readAsDataUrl(item.file) })));
  }

  render() {
    this.tray.hidden = this.items.length === 0;
    this.tray.replaceChildren(
      ...this.items.map((item, i) =>
        h(
          'li',
          { class: 'attachment', dataset: { type: item.type } },
          h('img', { class: 'thumb', src: item.preview, alt: t('image.attached', { n: i + 1 }) + (item.file.name ? `: ${item.file.name}` : '') }),
          h(
            'button',
            { type: 'button', class: 'ghost small attachment-remove', 'aria-label': t('image.remove', { n: i + 1 }), onclick: () => this.remove(i) },
            '✕',
          ),
        ),
      ),
    );
  }
}
