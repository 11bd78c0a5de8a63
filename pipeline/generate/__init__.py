"""Generation: generative remove, fill, expand, regenerate and text-to-image.

- :mod:`pipeline.generate.layers` — generated layers in an EditState and their exact compositing (no torch);
- :mod:`pipeline.generate.base` — the backend interface, parameters and errors;
- :mod:`pipeline.generate.backends` — which backend runs, from the environment;
- :mod:`pipeline.generate.operations` — remove / fill / expand / text-to-image on top of any backend;
- :mod:`pipeline.generate.diffusers_backend` — in-process diffusers inpainting models (torch imported lazily);
- :mod:`pipeline.generate.comfyui` — a ComfyUI server through its HTTP API;
- :mod:`pipeline.generate.runtime` — device choice, Hugging Face Spaces (ZeroGPU / CPU Basic).

Importing this package never imports torch: ``make run`` stays light.
"""
