"""Randomly initialised Stable Diffusion inpainting pipelines, built in code (no downloads).

``tiny_inpaint_pipeline`` is what the tests run; ``sd2_sized_inpaint_pipeline``
has the real SD2-inpainting architecture (865M-parameter UNet, full VAE and
text encoder) with random weights, so ``python -m pipeline.bench --generate``
measures seconds per step and peak memory on a GPU without any download.

Modelled on diffusers' own fast tests (tests/pipelines/stable_diffusion_2/
test_stable_diffusion_inpaint.py, get_dummy_components): a two-block UNet with
9 input channels, a two-block VAE, a 5-layer CLIP text encoder of width 32,
and a byte-level CLIP tokenizer whose vocab and merges this module writes
itself. It runs 64x64 in about a second per step on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def write_tokenizer(folder: Path):
    """Write a byte-level CLIP vocab (514 tokens, no merges) to ``folder`` and load it."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77)


def tiny_inpaint_pipeline(tmp: Path):
    """A StableDiffusionInpaintPipeline with random tiny weights (seeded: the same weights every call)."""
    import torch
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=9, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, attention_head_dim=(2, 4), use_linear_projection=True)
    torch.manual_seed(0)
    vae = AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3,
                        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
                        latent_channels=4, sample_size=128)
    torch.manual_seed(0)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        bos_token_id=0, eos_token_id=2, hidden_size=32, intermediate_size=37, layer_norm_eps=1e-5,
        num_attention_heads=4, num_hidden_layers=5, pad_token_id=1, vocab_size=1000, hidden_act="gelu",
        projection_dim=512))
    pipe = StableDiffusionInpaintPipeline(
        unet=unet, scheduler=PNDMScheduler(skip_prk_steps=True, steps_offset=1), vae=vae,
        text_encoder=text_encoder, tokenizer=write_tokenizer(tmp / "tokenizer"), safety_checker=None,
        feature_extractor=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def sd2_sized_inpaint_pipeline(tmp: Path, dtype=None):
    """SD2-inpainting-sized UNet, VAE and text encoder with random weights (about 1.3 B parameters)."""
    import torch
    from diffusers import AutoencoderKL, DPMSolverMultistepScheduler, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=64, in_channels=9, out_channels=4, layers_per_block=2,
        block_out_channels=(320, 640, 1280, 1280), attention_head_dim=(5, 10, 20, 20), cross_attention_dim=1024,
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
        use_linear_projection=True)
    vae = AutoencoderKL(block_out_channels=[128, 256, 512, 512], in_channels=3, out_channels=3, latent_channels=4,
                        down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
                        layers_per_block=2, sample_size=512)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        bos_token_id=0, eos_token_id=2, hidden_size=1024, intermediate_size=4096, num_attention_heads=16,
        num_hidden_layers=23, pad_token_id=1, vocab_size=1000, hidden_act="gelu", projection_dim=512))
    pipe = StableDiffusionInpaintPipeline(
        unet=unet, scheduler=DPMSolverMultistepScheduler(), vae=vae, text_encoder=text_encoder,
        tokenizer=write_tokenizer(tmp / "tokenizer"), safety_checker=None, feature_extractor=None,
        requires_safety_checker=False)
    if dtype is not None:
        pipe.to(dtype=dtype)
    pipe.set_progress_bar_config(disable=True)
    return pipe
