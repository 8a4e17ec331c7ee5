"""Real serving stacks for ``test_real_servers.py``, run by a Python that has them (the ``serving`` test extra,
or ``MIAUDIT_SERVING_PYTHON``): a scikit-learn MLP on digits served by KServe's Python model server (Open
Inference Protocol v2) in one output mode, or logged with MLflow from a pandas DataFrame (a column signature).

    python _real_servers.py kserve OUTPUT PORT     # serves until killed
    python _real_servers.py mlflow-log DIR         # logs the model into DIR, then exits

The MLP is trained at start, seeded: a few seconds. Nothing of miaudit is imported here.
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.neural_network import MLPClassifier


def model() -> MLPClassifier:
    x, y = load_digits(return_X_y=True)
    return MLPClassifier(hidden_layer_sizes=(32,), max_iter=60, random_state=0).fit(x[:900] / 16.0, y[:900])


def kserve_main(output: str, port: int) -> None:
    import kserve
    from kserve import InferOutput, InferRequest, InferResponse

    mlp = model()

    class Digits(kserve.Model):
        def __init__(self) -> None:
            super().__init__("digits")
            self.ready = True

        def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
            x = payload.inputs[0].as_numpy().reshape(-1, 64) / 16.0
            if output == "label":
                outs = [InferOutput("label", [len(x)], "INT64", mlp.predict(x).astype(np.int64))]
            elif output == "top-k":
                p = mlp.predict_proba(x)
                top = np.argsort(-p, axis=1)[:, :3]
                outs = [InferOutput("classes", list(top.shape), "INT64", top.astype(np.int64)),
                        InferOutput("probabilities", list(top.shape), "FP32",
                                    np.take_along_axis(p, top, 1).astype(np.float32))]  # fmt: skip
            else:
                p = mlp.predict_proba(x)
                y = np.log(np.maximum(p, 1e-12)) if output == "logits" else p
                outs = [InferOutput("output-0", list(y.shape), "FP32", y.astype(np.float32))]
            return InferResponse(payload.id or "miaudit-test", self.name, outs)  # a request may carry no id

    kserve.ModelServer(http_port=port, grpc_port=port + 1, enable_grpc=False, workers=1).start([Digits()])


def mlflow_log(where: str) -> None:
    import mlflow.sklearn
    import pandas as pd
    from mlflow.models import infer_signature

    mlp = model()
    frame = pd.DataFrame(load_digits().data[:5] / 16.0, columns=[f"px{i}" for i in range(64)])
    signature = infer_signature(frame, mlp.predict_proba(frame.to_numpy()))
    trusted = ["sklearn.neural_network._stochastic_optimizers.AdamOptimizer"]  # MLflow 3 saves with skops
    mlflow.sklearn.save_model(mlp, where, signature=signature, pyfunc_predict_fn="predict_proba",
                              skops_trusted_types=trusted)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1] == "kserve":
        kserve_main(sys.argv[2], int(sys.argv[3]))
    else:
        mlflow_log(sys.argv[2])
