"""The study's tasks: data, model, evaluation.

- logreg: L2-regularised logistic regression on a synthetic task whose optimum f* is computed
  once (L-BFGS in float64 on the whole training set), so suboptimality f - f* is measured;
- mlp and cnn: a small MLP and a small CNN on Fashion-MNIST (Debian's dataset-fashion-mnist,
  IDX files under /usr/share/datasets/fashion-mnist).

Every rank builds the same data from the seed and trains on its own shard.
"""

import gzip
import os

import numpy as np
import torch

FASHION_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def _idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


_fashion_cache = {}


def fashion_mnist():
    """(train_x, train_y, test_x, test_y): images as float32 in [0, 1], normalised."""
    if not _fashion_cache:
        parts = []
        for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                     "t10k-labels-idx1-ubyte"):
            parts.append(_idx(os.path.join(FASHION_DIR, name + ".gz")))
        tx = (torch.from_numpy(parts[0].astype(np.float32)) / 255.0 - 0.2860) / 0.3530
        vx = (torch.from_numpy(parts[2].astype(np.float32)) / 255.0 - 0.2860) / 0.3530
        _fashion_cache["data"] = (tx.unsqueeze(1), torch.from_numpy(parts[1].astype(np.int64)), vx.unsqueeze(1),
                                  torch.from_numpy(parts[3].astype(np.int64)))
    return _fashion_cache["data"]


class LogReg:
    """f(w) = mean log(1 + exp(-y x.w)) + lam/2 |w|^2 on N samples of d Gaussian features."""

    name = "logreg"
    samples, features, lam = 4096, 1000, 1e-3
    lr, momentum, batch = 1.0, 0.0, 64
    lr_halving_steps = 50  # lr / (1 + step / 50): SGD's noise floor falls, so a biased codec's stall shows

    def __init__(self, seed):
        g = torch.Generator().manual_seed(1000 + seed)
        self.x = torch.randn(self.samples, self.features, generator=g)
        w_true = torch.randn(self.features, generator=g)
        noise = 0.5 * torch.randn(self.samples, generator=g)
        self.y = torch.sign(self.x @ w_true + noise)
        self.f_star = self._optimum()

    def objective(self, w, x=None, y=None):
        x = self.x if x is None else x
        y = self.y if y is None else y
        margins = -y * (x @ w)
        return torch.nn.functional.softplus(margins).mean() + 0.5 * self.lam * (w * w).sum()

    def _optimum(self):
        x, y = self.x.double(), self.y.double()
        w = torch.zeros(self.features, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([w], lr=1, max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                                line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = self.objective(w, x, y)
            loss.backward()
            return loss

        opt.step(closure)
        return float(self.objective(w.detach(), x, y))

    def model(self, seed):
        torch.manual_seed(seed)
        m = torch.nn.Linear(self.features, 1, bias=False)
        torch.nn.init.zeros_(m.weight)
        return m

    def shard(self, rank, world):
        return self.x[rank::world], self.y[rank::world]

    def loss(self, net, model, x, y):
        """`net` is the model as trained (DDP-wrapped); `model` the module inside it."""
        w = model.weight.view(-1)
        return torch.nn.functional.softplus(-y * net(x).view(-1)).mean() + 0.5 * self.lam * (w * w).sum()

    def evaluate(self, model, final=True):
        with torch.no_grad():
            w = model.weight.view(-1).double()
            f = float(self.objective(w, self.x.double(), self.y.double()))
            accuracy = float(((self.x.double() @ w).sign() == self.y.double()).double().mean())
        return {"suboptimality": f - self.f_star, "accuracy": accuracy}


class Fashion:
    lr, momentum, batch = 0.05, 0.9, 64
    lr_halving_steps = None  # constant

    def __init__(self, seed):
        self.train_x, self.train_y, self.test_x, self.test_y = fashion_mnist()

    def shard(self, rank, world):
        return self.train_x[rank::world], self.train_y[rank::world]

    def loss(self, net, model, x, y):
        return torch.nn.functional.cross_entropy(net(x), y)

    def evaluate(self, model, final=True):
        """On the whole test set at the end of a run; along the way on its first 2000 images."""
        n = len(self.test_x) if final else 2000
        with torch.no_grad():
            logits = torch.cat([model(self.test_x[i:min(i + 2000, n)]) for i in range(0, n, 2000)])
            loss = float(torch.nn.functional.cross_entropy(logits, self.test_y[:n]))
            accuracy = float((logits.argmax(1) == self.test_y[:n]).double().mean())
        return {"test_loss": loss, "accuracy": accuracy}


class Mlp(Fashion):
    name = "mlp"

    def model(self, seed):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                   torch.nn.Linear(256, 10))


class Cnn(Fashion):
    name = "cnn"

    def model(self, seed):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Conv2d(1, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                   torch.nn.Conv2d(16, 32, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                   torch.nn.Flatten(), torch.nn.Linear(512, 10))


TASKS = {"logreg": LogReg, "mlp": Mlp, "cnn": Cnn}
