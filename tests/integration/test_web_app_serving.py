"""``ragline serve --web-app DIR``: a built single-page app at / with its fallback, the API beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.conftest import start_ragline
from tests.support.polling import CLIENT_TIMEOUT


def test_a_built_app_is_served_at_root_with_spa_fallback_and_the_api_beside_it(
    tmp_path: Path, shared_models: Any
) -> None:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<html>the app</html>")
    (dist / "assets" / "app.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("outside")
    server, handle = start_ragline(tmp_path / "data", shared_models, web_app_dir=dist)
    try:
        with httpx.Client(base_url=handle.url, timeout=CLIENT_TIMEOUT) as client:
            assert client.get("/").text == "<html>the app</html>"
            assert client.get("/platform/knowledge-bases").text == "<html>the app</html>"
            asset = client.get("/assets/app.js")
            assert asset.text == "console.log(1)"
            assert "immutable" in asset.headers["cache-control"]
            assert "outside" not in client.get("/../secret.txt").text
            assert "outside" not in client.get("/assets/..%2F..%2Fsecret.txt").text
            missing = client.get("/api/v1/no-such-route")
            assert missing.status_code == 404
            assert missing.json()["success"] is False
            assert handle.client.get("/api/v1/knowledge-bases").status_code == 200
    finally:
        handle.client.close()
        server.stop()
        handle.container.close()
