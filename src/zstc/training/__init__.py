"""Training NLI cross-encoders with the BTZSC paper's recipe (PROTOCOL.md section 5): ``zstc train-nli``."""

from zstc.training.recipe import TrainConfig, default_learning_rates
from zstc.training.trainer import TrainResult, evaluate_pairs, train_nli

__all__ = ["TrainConfig", "TrainResult", "default_learning_rates", "evaluate_pairs", "train_nli"]
