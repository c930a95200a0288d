"""Draw the documentation's figures from data shipped in the package: docs/images/size-accuracy.svg, the paper's 38
models' mean macro-F1 against their parameter count, one colour per family (the same figure ``zstc report`` draws,
``zstc.reports.figures.scaling``, over the published scores in ``zstc/resources/paper_scores``).

The cascade's figure (docs/cascade.png) is a measurement, drawn by ``benchmarks/cascade.py --plot``.

    python scripts/figures.py            # rewrite docs/images/size-accuracy.svg
    python scripts/figures.py --out DIR  # write it into DIR instead
"""

from __future__ import annotations

import argparse
from pathlib import Path

IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"


def size_accuracy(folder: Path) -> Path:
    """The figure, written into ``folder``; its path."""
    from zstc.benchmark.catalog import catalog
    from zstc.reports.figures import scaling, write_figure
    from zstc.reports.rows import paper_rows

    figure = scaling(paper_rows(), list(catalog()))
    figure.axes[0].set_title("The paper's 38 models: accuracy against size")
    return write_figure(figure, folder / "size-accuracy.svg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="folder to write into (default docs/images)")
    print(f"wrote {size_accuracy(parser.parse_args().out)}")


if __name__ == "__main__":
    main()
