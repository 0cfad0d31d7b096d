// vera view and vera view --bundle: each model call's body on a conversation page. A
// call's request holds the whole conversation so far, so written out in full a
// conversation's bodies grow with the square of its turns; a page's bodies are in a file
// of their own (runs/<k>/bodies/<page>.js: in the bundle, a file; on the server, built
// when asked for), each as copies of pieces of the bodies before it and its own new text
// (vera/viewer/delta.py), or, in the bundle, of one page's bodies that every page may copy
// from (runs/<k>/bodies.js). The page holds each call's summary line and, in place of the
// rest, <div class="call-wait" data-body="K">: the page's file (its own name, .js for
// .html) is loaded when a body is first opened (by <script>, as a page opened from disk
// may not fetch), and body K put together and shown then. The transcript never waits.
"use strict";
(function () {
  // The texts of a page back from their ops: a string is written as it is; three numbers
  // k, start, length copy a piece of text k (an earlier one, or this one's part already
  // written). Places count UTF-16 code units, a JavaScript string's. Text K is built
  // with those before it (each once).
  function decoder(encoded) {
    const texts = [];
    return function text(k) {
      if (!(k >= 0 && k < encoded.length)) throw new RangeError(`no call body ${k} in this file`);
      while (texts.length <= k) {
        const ops = encoded[texts.length];
        const parts = [];
        for (let i = 0; i < ops.length;) {
          if (typeof ops[i] === "string") {
            parts.push(ops[i]);
            i += 1;
          } else {
            // Text k is an earlier one, or this one (its part written so far).
            const own = ops[i] === texts.length;
            if (own) parts.splice(0, parts.length, parts.join(""));
            const source = own ? parts[0] : texts[ops[i]];
            parts.push(source.slice(ops[i + 1], ops[i + 1] + ops[i + 2]));
            i += 3;
          }
        }
        texts.push(parts.join(""));
      }
      return texts[k];
    };
  }

  window.veraBodies = { decoder };

  // runs/<k>/conversations/<page>.html -> runs/<k>/bodies/<page>.js (its name as in the
  // address); its texts' numbers follow those of runs/<k>/bodies.js when it says
  // "shared" (one page's bodies, which the others copy from: the judge's questions...).
  const FILE = `../bodies/${window.location.pathname.split("/").pop().replace(/\.html$/, "")}.js`;
  const SHARED = "../bodies.js";
  const BUNDLED = window.location.protocol === "file:";
  const scripts = new Map(); // file -> a promise of its loading
  function script(src, name) {
    if (!scripts.has(src)) {
      scripts.set(src, new Promise((resolve, reject) => {
        const tag = document.createElement("script");
        tag.src = src;
        const failed = () => Object.assign(new Error(`could not load ${src}`), { file: src });
        tag.onload = () => (window[name] ? resolve(window[name]) : reject(failed()));
        tag.onerror = () => {
          scripts.delete(src); // a later open tries again
          tag.remove();
          reject(failed());
        };
        document.head.append(tag);
      }));
    }
    return scripts.get(src);
  }
  let texts = null;
  function load() {
    if (!texts) {
      texts = script(FILE, "veraCallBodies").then((own) => {
        if (!own.shared) return decoder(own.texts);
        return script(SHARED, "veraSharedBodies").then((shared) => decoder(shared.concat(own.texts)));
      });
      texts.catch(() => { texts = null; });
    }
    return texts;
  }

  // Body K put in place of its placeholder; a promise of its being there (or of the
  // warning that it could not be), none when it is there already or on its way.
  function fill(details) {
    const wait = details.querySelector(":scope > .call-wait[data-body]");
    if (!wait || wait.dataset.asked) return null;
    wait.dataset.asked = "1";
    return load().then((text) => {
      // Our own markup, written (escaped) by the same code as the server's page; parsed
      // in a <template>, where nothing in it runs.
      const markup = document.createElement("template");
      markup.innerHTML = text(Number(wait.dataset.body));
      wait.replaceWith(markup.content);
    }).catch((error) => {
      delete wait.dataset.asked;
      wait.className = "call-wait warning";
      const file = decodeURIComponent(error.file || FILE);
      // A bundle is opened from disk: a file of it is missing. A page served by vera view
      // asks the server, which may have been stopped (or restarted on other runs).
      wait.textContent = BUNDLED
        ? ui("bodies_not_loaded", "This call's body is in {file}, which could not be read: open the bundle whole, as written.", { file })
        : ui("bodies_not_served", "This call's body could not be loaded from {file}: reload the page (vera view must be running).", { file });
    });
  }

  // "toggle" does not bubble: heard on its way down.
  document.addEventListener("toggle", (event) => {
    const details = event.target;
    if (details instanceof HTMLDetailsElement && details.open && details.matches("details.call-body")) fill(details);
  }, true);

  // An address naming a part of a body (#call-12-out, call 12's reply) opens that body
  // and goes to the part once it is in, as the browser does for a part already in the
  // page (when the whole body was written into it).
  function follow() {
    let id;
    try {
      id = decodeURIComponent(window.location.hash.slice(1));
    } catch (e) {
      return;
    }
    const call = /^(call-\d+)-/.exec(id);
    if (!call || document.getElementById(id)) return;
    const details = document.getElementById(call[1]);
    if (!(details instanceof HTMLDetailsElement) || !details.matches("details.call-body")) return;
    const there = fill(details); // before opening it: its toggle then finds it asked for
    details.open = true;
    if (!there) return;
    there.then(() => {
      const part = document.getElementById(id);
      (part && part.tagName !== "TEMPLATE" ? part : details).scrollIntoView();
    });
  }
  follow();
  window.addEventListener("hashchange", follow);
})();
