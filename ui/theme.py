"""The studio's look: dark neutral greys (colour judgement needs a neutral surround), one warm accent.

Fonts are system stacks only, so nothing is fetched from a font CDN.
"""

from __future__ import annotations

import inspect

import gradio as gr

_SANS = ["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"]
_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]

# Neutral greys, no tint: a tinted surround would bias colour judgement.
_BG, _PANEL, _RAISED, _LINE, _TEXT, _MUTED = "#141414", "#1c1c1c", "#242424", "#2e2e2e", "#e6e6e6", "#9a9a9a"
_ACCENT, _ACCENT_HOVER = "#d08a3c", "#e09a4c"


def studio_theme() -> gr.themes.Base:
    """A dark theme that stays dark whatever the visitor's system preference."""
    theme = gr.themes.Base(
        primary_hue=gr.themes.colors.orange,
        secondary_hue=gr.themes.colors.neutral,
        neutral_hue=gr.themes.colors.neutral,
        radius_size=gr.themes.sizes.radius_sm,
        text_size=gr.themes.sizes.text_md,
        font=_SANS,
        font_mono=_MONO,
    )
    colours = dict(
        body_background_fill=_BG,
        body_text_color=_TEXT,
        body_text_color_subdued=_MUTED,
        background_fill_primary=_PANEL,
        background_fill_secondary=_BG,
        block_background_fill=_PANEL,
        block_border_color=_LINE,
        block_label_background_fill=_RAISED,
        block_label_text_color=_MUTED,
        block_title_text_color=_MUTED,
        border_color_primary=_LINE,
        border_color_accent=_ACCENT,
        color_accent=_ACCENT,
        color_accent_soft=_RAISED,
        input_background_fill=_RAISED,
        input_border_color=_LINE,
        input_placeholder_color="#777777",
        button_primary_background_fill=_ACCENT,
        button_primary_background_fill_hover=_ACCENT_HOVER,
        button_primary_text_color="#141414",
        button_secondary_background_fill=_RAISED,
        button_secondary_background_fill_hover="#2f2f2f",
        button_secondary_text_color=_TEXT,
        button_secondary_border_color=_LINE,
        slider_color=_ACCENT,
        checkbox_label_background_fill=_RAISED,
        checkbox_label_background_fill_selected=_RAISED,
        checkbox_label_text_color=_TEXT,
        checkbox_background_color=_RAISED,
        checkbox_background_color_selected=_ACCENT,
        checkbox_border_color=_LINE,
        table_even_background_fill=_PANEL,
        table_odd_background_fill=_RAISED,
        table_border_color=_LINE,
        panel_background_fill=_PANEL,
        panel_border_color=_LINE,
        link_text_color=_ACCENT,
        link_text_color_visited=_ACCENT,
        code_background_fill=_RAISED,
        shadow_drop="none",
        shadow_drop_lg="none",
    )
    # Same values for light and dark, so the system preference cannot flip the studio to white.
    settable = set(inspect.signature(theme.set).parameters)
    dark = {f"{k}_dark": v for k, v in colours.items() if f"{k}_dark" in settable}
    theme.set(**colours, **dark)
    return theme


CSS = """
.gradio-container { max-width: 1880px !important; margin: 0 auto !important; }
#studio-header { align-items: center; gap: 12px; padding: 2px 0 4px 0; }
#studio-header h1 { font-size: 1.35rem; font-weight: 600; letter-spacing: .02em; margin: 0; }
#studio-header .tagline { color: #8a8a8a; font-size: .9rem; margin-top: 2px; }
#photo-title { color: #bdbdbd; font-size: .92rem; }
#compare { background: #0e0e0e; }
#compare img { object-fit: contain; }
#score { font-size: .95rem; line-height: 1.45; padding: 2px 4px; }
#notice { color: #f0b070; }
#notice:empty { display: none; }
#chat { background: #1a1a1a; }
#review-panel { border: 1px solid #d08a3c66 !important; background: #1f1b17 !important; border-radius: 6px; padding: 8px 10px; }
#review-panel button { white-space: nowrap; }
.metrics { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 2px; }
.metric { display: inline-flex; gap: 6px; align-items: baseline; background: #262320; border: 1px solid #3a342d;
          border-radius: 12px; padding: 2px 9px; font-size: .8rem; }
.metric-name { color: #a9a09a; }
.metric-value { font-variant-numeric: tabular-nums; font-weight: 600; }
.metric.custom-field { border-style: dashed; }
.metric.not-assessed .metric-value { color: #777; font-weight: 400; }
#review-panel h3 { margin: 0 0 4px 0; font-size: 1.02rem; }
#right-column .label-wrap, #right-column h4 { color: #9a9a9a; }
.panel-title { color: #9a9a9a; text-transform: uppercase; font-size: .74rem; letter-spacing: .09em; margin: 2px 0 6px 0; }
#adjustments { font-size: .88rem; }
.adj-group { margin: 0 0 10px 0; }
.adj-group-name { color: #8a8a8a; text-transform: uppercase; font-size: .7rem; letter-spacing: .08em; margin-bottom: 3px; }
.adj-local .adj-group-name { color: #d3a673; }
.adj-row { display: grid; grid-template-columns: minmax(0, 1fr) 64px 34px; align-items: center; gap: 8px; padding: 2px 0; }
.adj-label { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.adj-bar { position: relative; height: 4px; background: #333; border-radius: 2px; }
.adj-bar::after { content: ""; position: absolute; left: 50%; top: -3px; width: 1px; height: 10px; background: #666; }
.adj-fill { position: absolute; top: 0; height: 4px; background: #d08a3c; border-radius: 2px; }
.adj-value { text-align: right; font-variant-numeric: tabular-nums; font-family: ui-monospace, Menlo, monospace; }
.adj-empty { color: #8a8a8a; font-style: italic; }
#sub-goals { font-size: .88rem; }
#gallery .caption-label { font-size: .74rem; max-width: 100% !important; white-space: normal !important;
                          overflow-wrap: anywhere; line-height: 1.25; }
#gallery .thumbnail-item.abandoned img { filter: grayscale(1) brightness(.55); }
#gallery .thumbnail-item.abandoned .caption-label { color: #8a8a8a; text-decoration: line-through; }
#gallery .thumbnail-item.variant { opacity: .7; transform: scale(.9); }
.metric-details summary { cursor: pointer; color: #9a9a9a; font-size: .8rem; margin-top: 4px; }
.metric.detail { font-size: .72rem; padding: 1px 7px; }
#start-panel { border: 1px solid #2e2e2e; border-radius: 8px; padding: 14px; background: #181818; }
#upload { min-height: 220px; }
#turn-progress { padding: 0 2px; }
.tp { font-size: .84rem; }
.tp-steps { display: flex; gap: 6px; align-items: center; color: #777; font-size: .74rem; text-transform: uppercase;
            letter-spacing: .08em; }
.tp-step.tp-done { color: #b8a48c; }
.tp-step.tp-active { color: #e09a4c; font-weight: 600; }
.tp-sep { color: #555; }
.tp-bar { height: 3px; background: #2e2e2e; border-radius: 2px; margin: 5px 0 4px 0; overflow: hidden; }
.tp-fill { height: 3px; background: #d08a3c; transition: width .25s ease-out; }
.tp-message { color: #d6d6d6; }
/* Gradio's loading timer sits on a translucent overlay (over a photo it failed contrast): give it its own ground */
.meta-text, .meta-text-center { background: #1c1c1ce6 !important; color: #e6e6e6 !important; border-radius: 4px; }
#schema-panel { margin-top: 10px; }
#schema-help { color: #a9a9a9; font-size: .86rem; }
#schema-status { font-size: .88rem; }
/* keyboard focus always shows */
:focus-visible, #compare [data-testid=slider]:focus, #gallery .thumbnail-item:focus-visible {
  outline: 3px solid #f0a850 !important; outline-offset: 2px !important; }
#compare [data-testid=slider]:focus .inner { background: #f0a850 !important; }
/* Gradio's own image-slider undo (of a zoom) would read as ours */
#compare .icon-button[aria-label=Undo] { display: none !important; }
/* "Clear" would only blank this tab's copy of the conversation; the session keeps it */
#chat button[aria-label=Clear] { display: none !important; }
#photo-tools { align-items: center; flex-wrap: wrap; gap: 6px; }
#photo-tools > * { flex: 0 1 auto !important; }
#model-badge { margin-top: 4px; }
/* values the page script reads; never shown */
#compare-alt, #modify-target, #preview-key { display: none !important; }
.model-badge { display: inline-flex; align-items: center; gap: 6px; font-size: .74rem; color: #cfcfcf;
               border: 1px solid #3a3a3a; border-radius: 10px; padding: 1px 9px; }
.badge-dot { width: 7px; height: 7px; border-radius: 50%; background: #888; }
.badge-model .badge-dot { background: #6cbf6c; }
.badge-fallback .badge-dot { background: #e0a040; }
.badge-embedded .badge-dot { background: #8aa8d8; }
#quick-replies { flex-wrap: wrap; gap: 6px; }
#quick-replies button { flex: 0 1 auto !important; }
#adjustments .adj-stage { margin-bottom: 4px; }
#adjustments .adj-slider { padding-top: 2px; padding-bottom: 2px; }
#adjustments-summary { color: #9a9a9a; font-size: .82rem; }
/* desktop: the chat above the message box; the page (and keyboard) order is input, send, review, chat */
#talk-column > #chat { order: 1; }
#talk-column > #quick-replies { order: 2; }
#talk-column > #turn-progress { order: 3; }
#talk-column > #input-row { order: 4; }
#talk-column > #review-panel { order: 5; }
@media (max-width: 1100px) {
  #studio-row { flex-wrap: wrap !important; }
  #studio-row > #right-column { flex: 1 1 100% !important; min-width: 100% !important; }
}
/* phones: one column; photo, then the message box and Send, then the chat, then the panels */
@media (max-width: 720px) {
  html, body { overflow-x: hidden; }
  .gradio-container .main { padding-left: 8px !important; padding-right: 8px !important; }
  #studio-row, #studio-header, #start-row { flex-direction: column !important; flex-wrap: nowrap !important; }
  #studio-row > .column, #studio-header > *, #start-row > .column {
    width: 100% !important; min-width: 0 !important; max-width: 100% !important; flex: 1 1 auto !important; }
  #talk-column > #input-row { order: 1; }
  #talk-column > #turn-progress { order: 2; }
  #talk-column > #chat { order: 3; }
  #talk-column > #quick-replies { order: 4; }
  #talk-column > #review-panel { order: 5; }
  #compare { height: auto !important; max-height: 420px; }
  #chat { height: 320px !important; max-height: 320px !important; }
  #review-panel .row { flex-wrap: wrap; }
  #review-panel button { flex: 1 1 40% !important; min-width: 0 !important; }
  #photo-tools > * { min-width: 0 !important; }
  #export-format { min-width: 0 !important; }
  #demo-photos, #demo-photos .grid-wrap, #gallery, #gallery .grid-wrap { height: auto !important; max-height: none !important; }
  #demo-photos .grid-container { grid-template-columns: repeat(2, minmax(0, 1fr)) !important;
                                 grid-auto-rows: auto !important; grid-template-rows: none !important; }
  #gallery .grid-container { grid-template-columns: repeat(3, minmax(0, 1fr)) !important;
                             grid-auto-flow: row !important; grid-template-rows: none !important; }
  #demo-photos .thumbnail-item, #gallery .thumbnail-item { min-width: 0 !important; }
}
"""


#: Runs once in the browser. Keeps the page dark; gives the photos alt text (which version is
#: shown), makes the before/after divider a keyboard slider, names the history thumbnails, keeps
#: the chat's copy buttons out of the tab order, makes the adjustment sliders record a version on
#: keyboard use and reset on double-click, and maps Ctrl+Z / Ctrl+Shift+Z to Undo / Redo.
JS = r"""
() => {
  document.body.classList.add('dark');
  const q = (sel, root) => (root || document).querySelector(sel);
  const qa = (sel, root) => [...(root || document).querySelectorAll(sel)];
  const setAttr = (el, k, v) => { if (el.getAttribute(k) !== v) el.setAttribute(k, v); };

  function dividerPercent(box) {
    const img = qa('img', box)[1];
    const m = img && /inset\([^)]*?([\d.]+)%\)/.exec(img.style.clipPath || '');
    return m ? Math.round(parseFloat(m[1])) : 50;
  }
  function moveDivider(handle, deltaPx) {
    const b = handle.getBoundingClientRect(), x = b.left + b.width / 2, y = b.top + b.height / 2;
    const ev = (t, cx) => new MouseEvent(t, {bubbles: true, cancelable: true, clientX: cx, clientY: y, view: window, button: 0});
    handle.dispatchEvent(ev('mousedown', x));
    window.dispatchEvent(ev('mousemove', x + deltaPx));
    window.dispatchEvent(ev('mouseup', x + deltaPx));
  }
  function wireCompare() {
    const box = q('#compare');
    if (!box) return;
    let alts = {};
    try { alts = JSON.parse((q('#compare-alt textarea, #compare-alt input') || {}).value || '{}'); } catch (e) {}
    const imgs = qa('img', box);
    // the studio drew a live preview until the recorded version replaced it
    if (window.atelierLive && window.atelierLive.active && imgs[1]
        && !(imgs[1].getAttribute('src') || '').startsWith('blob:')) window.atelierLive.active = false;
    const previewing = window.atelierLive && window.atelierLive.active;
    if (imgs[0]) setAttr(imgs[0], 'alt', alts.before || 'Before: the original photo');
    if (imgs[1]) setAttr(imgs[1], 'alt', previewing ? 'After: a live preview of your slider values (not kept yet)'
                                                    : (alts.after || 'After: the edited photo'));
    const handle = q('[data-testid=slider]', box);
    if (!handle) return;
    setAttr(handle, 'role', 'slider');
    setAttr(handle, 'tabindex', '0');
    setAttr(handle, 'aria-label', 'Before and after divider: left and right arrows move it');
    setAttr(handle, 'aria-valuemin', '0');
    setAttr(handle, 'aria-valuemax', '100');
    setAttr(handle, 'aria-valuenow', String(dividerPercent(box)));
    if (!handle.dataset.keys) {
      handle.dataset.keys = '1';
      handle.addEventListener('keydown', (e) => {
        const width = handle.parentElement.getBoundingClientRect().width || 400;
        const now = dividerPercent(box);
        const step = (e.shiftKey ? 20 : 5);
        let target = null;
        if (e.key === 'ArrowLeft' || e.key === 'ArrowDown') target = now - step;
        else if (e.key === 'ArrowRight' || e.key === 'ArrowUp') target = now + step;
        else if (e.key === 'Home') target = 0;
        else if (e.key === 'End') target = 100;
        if (target === null) return;
        e.preventDefault();
        target = Math.max(0, Math.min(100, target));
        moveDivider(handle, (target - now) / 100 * width);
        setTimeout(() => setAttr(handle, 'aria-valuenow', String(dividerPercent(box))), 30);
      });
    }
  }
  function wireGallery() {
    qa('#gallery .thumbnail-item').forEach((item) => {
      const cap = q('.caption-label', item);
      const text = cap ? cap.textContent.trim() : '';
      if (!text) return;
      const parts = text.split(' · ');
      const head = parts[0] === '0' ? 'The original' : 'Version ' + parts[0];
      const rest = parts.slice(1).filter((p) => p !== 'original')
        .map((p) => /^\d\.\d\d$/.test(p) ? 'score ' + p : p);
      // the spoken name, then the caption as shown (a name must contain the visible text)
      setAttr(item, 'aria-label', head + (rest.length ? ': ' + rest.join(', ') : '') + ' — ' + text);
      const img = q('img', item);
      if (img) setAttr(img, 'alt', '');
      item.classList.toggle('abandoned', text.includes('rolled back'));
      item.classList.toggle('variant', / · variant$/.test(text));
    });
  }
  function wireDemos() {
    qa('#demo-photos .thumbnail-item').forEach((item) => {
      const cap = q('.caption-label', item);
      if (cap) setAttr(item, 'aria-label', 'Start with the demo photo ' + cap.textContent.trim());
      const img = q('img', item);
      if (img) setAttr(img, 'alt', '');      // the button says it (the caption repeats the name)
    });
    // the upload area's name must contain what it shows
    const drop = q('#upload .upload-container');
    if (drop) {
      const said = drop.textContent.replace(/\s+/g, ' ').trim();
      if (said) setAttr(drop, 'aria-label', said + ': a photo (JPEG, PNG, TIFF or WebP)');
    }
  }
  function wireChat() {
    // The chat is read (role=log), not operated: its per-message buttons stay out of the tab order.
    qa('#chat button, #chat [tabindex="0"]').forEach((b) => setAttr(b, 'tabindex', '-1'));
  }
  let queued = false;
  function sweep() {
    queued = false;
    wireCompare(); wireGallery(); wireDemos(); wireChat();
  }
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(sweep); } })
    .observe(document.body, {subtree: true, childList: true, attributes: true,
                             attributeFilter: ['src', 'style', 'value', 'class']});
  sweep();

  // Live slider previews (ui/live.py): one request in flight; when it lands, only the newest position is
  // asked for next (the ones in between are never rendered). The answer is drawn on the "after" photo.
  const LIVE_ALT = 'After: a live preview of your slider values (not kept yet)';
  const live = {busy: false, next: null, active: false, recorded: null, gen: 0, restore: 0, times: []};
  window.atelierPreviewTimes = live.times;      // ms from a move to its picture on screen (tests log them)
  const afterImg = () => qa('#compare img')[1];
  const previewKey = () => ((q('#preview-key textarea, #preview-key input') || {}).value || '');
  function askPreview(range) {
    const box = range.closest('.adj-slider');
    if (!box || !box.id || range.disabled) return;
    live.next = {where: box.id, value: range.value, t0: performance.now(), gen: live.gen};
    if (!live.busy) sendPreview();
  }
  function sendPreview() {
    const ask = live.next;
    live.next = null;
    const key = previewKey();
    if (!ask || !key) return;
    live.busy = true;
    const url = 'studio/preview?' + new URLSearchParams({key: key, where: ask.where, value: ask.value});
    fetch(url, {cache: 'no-store'}).then((r) => (r.ok ? r.blob() : null)).then((blob) => {
      const img = afterImg();
      if (!blob || !img || ask.gen !== live.gen) return;
      if (!live.active) { live.recorded = img.getAttribute('src'); live.active = true; }
      const old = (img.getAttribute('src') || '').startsWith('blob:') ? img.getAttribute('src') : null;
      img.onload = () => { live.times.push(performance.now() - ask.t0); if (old) URL.revokeObjectURL(old); };
      img.src = URL.createObjectURL(blob);
      setAttr(img, 'alt', LIVE_ALT);
    }).catch(() => {}).finally(() => { live.busy = false; if (live.next) sendPreview(); });
  }
  function endLive() {
    // back to the recorded version (released where it started, or a release that recorded nothing)
    live.gen += 1;
    live.next = null;
    const img = afterImg();
    if (live.active && img && live.recorded) img.src = live.recorded;
    live.active = false;
  }
  window.atelierLive = live;

  // Adjustment sliders: a release records a version. A pointer release is held back a moment, so the
  // first click of a double-click records nothing; double-click resets to the default. Arrow keys record
  // once the keys rest.
  const HOLD_MS = 300;
  const held = new WeakMap();
  const rested = new WeakMap();
  const isRange = (el) => el && el.matches && el.matches('.adj-slider input[type=range]');
  const remember = (e) => { if (isRange(e.target) && e.target.dataset.before === undefined) e.target.dataset.before = e.target.value; };
  document.addEventListener('pointerdown', remember, true);
  document.addEventListener('keydown', remember, true);
  document.addEventListener('input', (e) => { if (isRange(e.target)) askPreview(e.target); }, true);
  function release(range) {
    const before = range.dataset.before;
    delete range.dataset.before;
    clearTimeout(live.restore);
    if (before !== undefined && Number(before) === Number(range.value)) { endLive(); return; }
    range.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
    // the recorded version replaces the preview; if nothing comes (an error), show the recorded one again
    live.restore = setTimeout(() => { if (live.active) endLive(); }, 8000);
  }
  document.addEventListener('pointerup', (e) => {
    if (!isRange(e.target) || !e.isTrusted) return;
    e.stopPropagation();
    const range = e.target;
    clearTimeout(held.get(range));
    held.set(range, setTimeout(() => { held.delete(range); release(range); }, HOLD_MS));
  }, true);
  document.addEventListener('keyup', (e) => {
    if (!isRange(e.target) || !/^(Arrow|Home|End|Page)/.test(e.key)) return;
    clearTimeout(rested.get(e.target));
    rested.set(e.target, setTimeout(() => release(e.target), 450));
  });
  document.addEventListener('dblclick', (e) => {
    const box = e.target.closest && e.target.closest('.adj-slider');
    const range = box && q('input[type=range]', box);
    if (!range || range.disabled) return;
    clearTimeout(held.get(range));
    held.delete(range);
    const m = /adj-default-(-?[\d_]+)/.exec(box.className);
    const value = m ? m[1].replace('_', '.') : '0';
    if (range.dataset.before === undefined) range.dataset.before = range.value;
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
    setter.call(range, value);
    range.dispatchEvent(new Event('input', {bubbles: true}));
    release(range);
  });
  // Ctrl+Z / Ctrl+Shift+Z (and Ctrl+Y): undo / redo a version, except while typing text.
  document.addEventListener('keydown', (e) => {
    if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
    const t = e.target;
    if (t && (t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && !/^(range|button|checkbox|radio)$/.test(t.type)) || t.isContentEditable)) return;
    const key = e.key.toLowerCase();
    let id = null;
    if (key === 'z') id = e.shiftKey ? 'redo' : 'undo';
    else if (key === 'y') id = 'redo';
    if (!id) return;
    const b = q('#' + id);
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  });
}
"""
