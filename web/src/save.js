// Saving a result to a file while it streams, without holding it in the page: with the File
// System Access API (Chromium), the chosen file is written message by message; elsewhere
// each message goes into a Blob (kept by the browser's blob store, which spills to disk,
// not by the page's heap) and the whole is offered as a download at the end.

import { compactText } from "./boards.js";

/**
 * Opens where a result of boards of size n goes, in `form` ("packed": n bytes a board;
 * "text": one `1,3,0,2` line a board). Must be called from a click (the file picker needs
 * one). Returns `{ write(packed), close() -> link or undefined, abort() }`, or undefined
 * when the person cancels the picker.
 */
export async function openSave(form, n) {
  const name = `queens-${n}.${form === "text" ? "txt" : "bin"}`;
  const bytes = (packed) =>
    form === "text" ? new TextEncoder().encode(compactText(packed, n)) : packed;
  if (typeof window.showSaveFilePicker === "function") {
    let handle;
    try {
      handle = await window.showSaveFilePicker({ suggestedName: name });
    } catch (error) {
      if (error?.name === "AbortError") return undefined;
      throw error;
    }
    const file = await handle.createWritable();
    let written = 0;
    return {
      name: handle.name ?? name,
      async write(packed) {
        const chunk = bytes(packed);
        written += chunk.length;
        await file.write(chunk);
      },
      async close() {
        await file.close();
        return { name: handle.name ?? name, bytes: written };
      },
      async abort() {
        await file.abort();
      },
    };
  }
  const parts = [];
  let written = 0;
  return {
    name,
    async write(packed) {
      const chunk = bytes(packed);
      written += chunk.length;
      // The copy goes to the browser's blob store; the page keeps a handle.
      parts.push(new Blob([chunk]));
    },
    async close() {
      const blob = new Blob(parts, { type: "application/octet-stream" });
      parts.length = 0;
      return { name, bytes: written, url: URL.createObjectURL(blob) };
    },
    async abort() {
      parts.length = 0;
    },
  };
}
