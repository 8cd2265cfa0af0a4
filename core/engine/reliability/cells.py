"""A label matrix as sparse answer cells: the pairwise counts of answers that sources share
(one-hot products), which the one-coin and AccuCopy estimators and the identification check
both need."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import sparse

from core.engine.reliability.base import LabelMatrix

FloatArray = npt.NDArray[np.float64]


class AnswerCells:
    """The answers as sparse cells: answer k is source ``source[k]`` giving label ``label[k]``
    to query ``query[k]`` (cell ``query * n_labels + label``); ``x`` is the sources x cells
    one-hot matrix (``xt`` its transpose), ``a`` the sources x queries answered matrix."""

    def __init__(self, labels: LabelMatrix, answered: npt.NDArray[np.bool_], n_labels: int) -> None:
        n_queries, n_sources = labels.shape
        self.query, self.source = (np.asarray(a, dtype=np.int64) for a in np.nonzero(answered))
        self.label = labels[self.query, self.source]
        self.cell = self.query * n_labels + self.label
        self.n_queries, self.n_sources, self.n_labels = n_queries, n_sources, n_labels
        shape = (n_sources, n_queries * n_labels)
        ones = np.ones(len(self.cell))
        self.x = sparse.csr_matrix((ones, (self.source, self.cell)), shape=shape)
        self.a = sparse.csr_matrix((ones, (self.source, self.query)), shape=(n_sources, n_queries))
        self.xt = self.x.T.tocsr()
        self._shared: FloatArray | None = None
        self._same: FloatArray | None = None
        # A dense copy of x when it is small: BLAS beats sparse-sparse products there.
        self.dense = self.x.toarray() if n_sources * n_queries * n_labels <= 20_000_000 else None

    @classmethod
    def of(cls, labels: LabelMatrix) -> AnswerCells:
        """The cells of a queries x sources label matrix (MISSING = IDK: no cell)."""
        n_labels = max(int(labels.max()) + 1, 1) if labels.size else 1
        return cls(labels, labels >= 0, n_labels)

    def pair_constants(self) -> tuple[FloatArray, FloatArray]:
        """Queries both sources answered, and answers they share (fixed for the matrix)."""
        if self._shared is None or self._same is None:
            self._shared = np.asarray((self.a @ self.a.T).toarray(), dtype=np.float64)
            if self.dense is not None:
                self._same = self.dense @ self.dense.T
            else:
                self._same = np.asarray((self.x @ self.x.T).toarray(), dtype=np.float64)
        return self._shared, self._same

    def same_weighted(self, cell_weight: FloatArray) -> FloatArray:
        """sum over cells of x[s, c] * cell_weight[c] * x[s', c]."""
        if self.dense is not None:
            out: FloatArray = (self.dense * cell_weight[None, :]) @ self.dense.T
            return out
        weighted = self.x.multiply(cell_weight.reshape(1, -1)).tocsr()
        return np.asarray((weighted @ self.x.T).toarray(), dtype=np.float64)

    def scores(self, weights: FloatArray, discount: FloatArray) -> FloatArray:
        """score[q, c] = sum of the (discounted) weights of the answers c to q (one weight per answer)."""
        flat = np.bincount(self.cell, weights=weights * discount, minlength=self.n_queries * self.n_labels)
        out: FloatArray = np.asarray(flat, dtype=np.float64).reshape(self.n_queries, self.n_labels)
        return out
