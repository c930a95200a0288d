"""``zstc serve``: the HTTP service (needs the ``serve`` extra: fastapi, uvicorn)."""

from __future__ import annotations

from typing import Annotated

import typer

from zstc.cli import app
from zstc.cli.options import DEFAULT, Bf16, PrecisionAuto, requested_precision, Device, Family, Model, Pooling, scorer_options


@app.command()
def serve(
    model: Model = DEFAULT,
    family: Family = None,
    pooling: Pooling = None,
    precision: PrecisionAuto = None,
    bf16: Bf16 = None,
    device: Device = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
) -> None:
    """Serve POST /classify {texts, labels, template?} and GET /health with one model loaded once."""
    from zstc.errors import ModelError

    try:
        import uvicorn
    except ImportError:
        raise ModelError("zstc serve needs the serve extra: pip install 'zstc[serve]'") from None
    from zstc.api import Classifier
    from zstc.server.app import create_app

    classifier = Classifier(model, family=family, **scorer_options(pooling=pooling, precision=requested_precision(precision, bf16, "auto"), device=device))
    classifier.scores(["warm-up"], ["a", "b"])  # load the model before accepting requests
    uvicorn.run(create_app(classifier), host=host, port=port)
