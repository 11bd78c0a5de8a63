"""No database or session file is ever served through Gradio's file routes of a launched app.

The database lives outside the sessions folder, the storage is a shared
``file://`` folder, and the deployment allows their whole parent folder — so
only the block list (``Studio.private_paths()`` passed to ``launch``) stands
between a browser and the files. A public file in the same folder is served,
which shows the route works and the test can fail.
"""

from __future__ import annotations

import httpx
import pytest

from agent.service import Studio
from conftest import ScriptedJudge, ScriptedPlanner, free_port


@pytest.fixture
def launched(tmp_path, photo):
    from app import create_app

    root = tmp_path / "deploy"
    (root / "db").mkdir(parents=True)
    studio = Studio(database_url=f"sqlite:///{root / 'db' / 'atelier.db'}", sessions_dir=root / "sessions",
                    storage_url=(root / "shared").as_uri(), planner=ScriptedPlanner(), judge=ScriptedJudge([0.95]))
    demo, options = create_app(studio)
    options["allowed_paths"] = [*options["allowed_paths"], str(root)]   # a careless, broad allow-list
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    try:
        info = studio.start_session(photo, review_mode="never")
        studio.send_message(info.id, "exposure+10")
        studio.export(info.id, fmt="png")
        studio.preview(info.id, {"contrast": 20})
        studio.blobs.put_array(photo[:16, :16])
        yield f"http://127.0.0.1:{port}/", root, studio
    finally:
        demo.close()
        studio.close()


def test_every_database_and_session_file_is_refused(launched):
    url, root, studio = launched
    files = sorted(p for p in root.rglob("*") if p.is_file())
    names = {p.name for p in files}
    # what the service really wrote: database + WAL, checkpoints, secret, original, renders, export, blob
    assert {"atelier.db", "atelier.db-wal", "checkpoints.db", ".browser-secret", "original.png"} <= names
    assert any(p.parent.name == "exports" for p in files) and any(p.parent.name == "renders" for p in files)
    assert any(p.parent.parent.name == "blobs" for p in files)
    assert any(p.parent.name == "previews" for p in files)
    for path in files:
        r = httpx.get(f"{url}gradio_api/file={path}")
        assert r.status_code == 403, (str(path.relative_to(root)), r.status_code)
    for path in studio.private_paths():
        assert httpx.get(f"{url}gradio_api/file={path}").status_code in (403, 404)
    public = root / "public.txt"
    public.write_text("meant to be served")
    assert httpx.get(f"{url}gradio_api/file={public}").text == "meant to be served"
