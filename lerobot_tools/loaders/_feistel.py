"""A keyed bijection of ``[0, n)``: an unbalanced Feistel network with cycle-walking (numpy only).

Used by :class:`~lerobot_tools.loaders.EpisodeAwareSampler` to shuffle frame positions without ever
materialising a permutation: the position of the ``j``-th sample is ``permute(j)``, computed in O(1) time
and memory, so any point of an epoch can be reached instantly (resume) and every rank can evaluate its
own share of the same permutation without communicating.

Construction (Black & Rogaway, "Ciphers with arbitrary finite domains", CT-RSA 2002, cycle-walking; the
round function is the splitmix64 finaliser of Steele et al., "Fast splittable pseudorandom number
generators", OOPSLA 2014):

* ``b = max(2, ceil(log2(n)))`` bits; the input is split into a left half of ``ceil(b/2)`` bits and a
  right half of ``floor(b/2)`` bits. Each round maps ``(L, R) -> (R, L xor F_k(R))``, truncated to the
  width of ``L``; the two halves swap widths every round, so an even number of rounds returns to the
  original layout. Every round is invertible, so the network is a bijection of ``[0, 2^b)``.
* ``2^b < 2n`` (for ``n >= 3``), so cycle-walking (re-applying the network while the output is ``>= n``)
  needs fewer than 2 applications on average and always terminates in ``[0, n)``: the walk follows the
  cycle of the bijection containing the input, which must re-enter ``[0, n)``.
* Round keys come from :class:`numpy.random.SeedSequence` ``(seed, epoch, *tweak)``, so the order is a
  pure function of ``(seed, epoch, tweak, n)`` (a mixture keys one permutation per dataset and pass with
  the tweak).
"""

from __future__ import annotations

import numpy as np

ROUNDS = 6  # even: the halves return to their original widths

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a ``uint64`` array (wrapping multiplication)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


class FeistelPermutation:
    """A pseudo-random permutation of ``[0, n)`` keyed by ``(seed, epoch)``.

    Args:
        n: domain size (``0 <= n < 2**62``).
        seed: non-negative int.
        epoch: non-negative int.
        tweak: more non-negative ints mixed into the key (none: the key of earlier versions).

    Evaluation is vectorised: :meth:`__call__` maps an int64 array of positions to an int64 array of
    their images. Memory is O(1) in ``n``.
    """

    def __init__(self, n: int, seed: int, epoch: int, *tweak: int):
        n = int(n)
        if n < 0 or n >= 2**62:
            raise ValueError(f"permutation size must be in [0, 2**62), got {n}")
        self.n = n
        bits = max(2, int(n - 1).bit_length()) if n > 1 else 2
        self._lbits = (bits + 1) // 2
        self._rbits = bits // 2
        entropy = [int(seed) & (2**63 - 1), int(epoch) & (2**63 - 1), 0x46E15, *(int(t) & (2**63 - 1) for t in tweak)]
        keys = np.random.SeedSequence(entropy).generate_state(ROUNDS, dtype=np.uint64)
        self._keys = [np.uint64(k) for k in keys]

    def _network(self, x: np.ndarray) -> np.ndarray:
        la, lb = self._lbits, self._rbits
        left = x >> np.uint64(lb)
        right = x & np.uint64((1 << lb) - 1)
        wl, wr = la, lb  # current widths of left and right
        for k in self._keys:
            f = _mix(right ^ k) & np.uint64((1 << wl) - 1)
            left, right = right, left ^ f
            wl, wr = wr, wl
        # after an even number of rounds: left has la bits, right lb bits again
        return (left << np.uint64(lb)) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """Images of ``positions`` (int array, each in ``[0, n)``) under the permutation, as int64."""
        x = np.asarray(positions, dtype=np.uint64)
        if self.n <= 1:
            return x.astype(np.int64)
        n = np.uint64(self.n)
        with np.errstate(over="ignore"):
            y = self._network(x)
            out_of_range = y >= n
            while out_of_range.any():
                idx = np.flatnonzero(out_of_range)
                y[idx] = self._network(y[idx])
                out_of_range[idx] = y[idx] >= n
        return y.astype(np.int64)
