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
footer { opacity: .5; }
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
#gallery .caption-label { font-size: .74rem; max-width: 100% !important; white-space: nowrap; }
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
#schema-panel { margin-top: 10px; }
#schema-help { color: #a9a9a9; font-size: .86rem; }
#schema-status { font-size: .88rem; }
"""

#: Runs once in the browser: keep the page dark even where the system prefers light.
JS = "() => { document.body.classList.add('dark'); }"
