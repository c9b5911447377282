#!/usr/bin/python3
"""Independent numpy reference for the diffusion schedulers (test oracle for src/sd/scheduler*).

Usage: schedulers.py SPEC.json  → JSON on stdout

SPEC is a list of cases {"scheduler": NAME, "config": {...scheduler_config.json fields...},
"steps": N, "loop": {"n": ELEMENTS, "seed": S}}. For each case the output holds the timesteps,
sigmas and init_noise_sigma, and — when "loop" is given — the sample after a closed-loop run:

    x_k = cos(1.3 k) * init_noise_sigma
    for each step i:  x_in = x * input_scale_i
                      m_k  = 0.8 * tanh(x_in_k) + 0.2 * sin(0.37 k + 0.013 t_i)
                      x    = scheduler.step(m, i, x)

Euler ancestral draws its noise with numpy.random.RandomState(seed).randn(n) once per step.
The formulas follow diffusers' documented schedulers (PNDM/PLMS, DDIM η=0, Euler, Euler
ancestral, DPM-Solver++ 2M, LMS) written directly in float64 numpy; nothing is shared with the
C++ code.
"""
import json
import math
import sys

import numpy as np

DEFAULT_SPACING = {"pndm": "leading", "ddim": "leading", "euler": "linspace",
                   "euler_a": "linspace", "dpmpp_2m": "linspace", "dpmpp_2m_karras": "linspace",
                   "lms": "linspace"}


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def alphas_cumprod(cfg):
    T = cfg.get("num_train_timesteps", 1000)
    b0, b1 = cfg.get("beta_start", 0.0001), cfg.get("beta_end", 0.02)
    sched = cfg.get("beta_schedule", "linear")
    if sched == "linear":
        betas = np.linspace(b0, b1, T)
    elif sched == "scaled_linear":
        betas = np.linspace(b0 ** 0.5, b1 ** 0.5, T) ** 2
    else:  # squaredcos_cap_v2
        def ab(t):
            return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
        betas = np.array([min(1 - ab((i + 1) / T) / ab(i / T), 0.999) for i in range(T)])
    return np.cumprod(1.0 - betas)


def spaced(spacing, T, n, offset):
    """Descending timesteps of the Euler-family rules."""
    if spacing == "linspace":
        return np.linspace(0, T - 1, n)[::-1].copy()
    if spacing == "leading":
        ratio = T // n
        return (np.arange(0, n) * ratio).round()[::-1].astype(np.float64) + offset
    ratio = T / n
    return np.round(np.arange(T, 0, -ratio)) - 1.0


def karras(smin, smax, n):
    ramp = np.linspace(0, 1, n)
    lo, hi = smin ** (1 / 7.0), smax ** (1 / 7.0)
    return (hi + ramp * (lo - hi)) ** 7.0


def sigma_to_t(sigma, log_sigmas):
    """Fractional timestep of `sigma` by linear interpolation of log sigma."""
    ls = math.log(max(sigma, 1e-10))
    below = np.nonzero(log_sigmas <= ls)[0]
    lo = int(below[-1]) if below.size else 0
    lo = min(lo, len(log_sigmas) - 2)
    w = (log_sigmas[lo] - ls) / (log_sigmas[lo] - log_sigmas[lo + 1])
    w = min(max(w, 0.0), 1.0)
    return (1 - w) * lo + w * (lo + 1)


class Base:
    def __init__(self, cfg, name):
        self.cfg = cfg
        self.name = name
        self.T = cfg.get("num_train_timesteps", 1000)
        self.acp = alphas_cumprod(cfg)
        self.spacing = cfg.get("timestep_spacing") or DEFAULT_SPACING[name]
        self.offset = cfg.get("steps_offset", 0)
        self.pred = cfg.get("prediction_type", "epsilon")

    def input_scale(self, i):
        return 1.0


class Pndm(Base):
    def set(self, n):
        self.n = n
        T = self.T
        if self.spacing == "linspace":
            base = np.linspace(0, T - 1, n).round().astype(np.int64)
        elif self.spacing == "leading":
            base = np.arange(0, n) * (T // n) + self.offset
        else:
            base = np.round(np.arange(T, 0, -T / n))[::-1].astype(np.int64) - 1
        base = list(int(v) for v in base)
        # PLMS with skip_prk_steps: the second-largest timestep is visited twice.
        plms = base[:-1] + base[-2:-1] + base[-1:]
        self.ts = plms[::-1]
        self.sigmas = [math.sqrt((1 - self.acp[t]) / self.acp[t]) for t in self.ts]
        self.init_sigma = 1.0
        self.final = 1.0 if self.cfg.get("set_alpha_to_one", False) else self.acp[0]
        self.eps_hist = []
        self.x_first = None

    def transfer(self, x, t, tp, e):
        a = self.acp[t]
        ap = self.acp[tp] if tp >= 0 else self.final
        if self.pred == "v_prediction":
            e = math.sqrt(a) * e + math.sqrt(1 - a) * x
        # x_{t'} = sqrt(a'/a) x - (a' - a) e / (a sqrt(1-a') + sqrt(a (1-a) a'))
        return (math.sqrt(ap / a) * x -
                (ap - a) * e / (a * math.sqrt(1 - ap) + math.sqrt(a * (1 - a) * ap)))

    def step(self, m, i, x, rng):
        ratio = self.T // self.n
        t = self.ts[i]
        if i == 0:
            self.eps_hist = [m]
            self.x_first = x.copy()
            return self.transfer(x, t, t - ratio, m)
        if i == 1:
            # Second call at the repeated timestep: average with the first output, restart from
            # the first sample, go from t + ratio down to t.
            e = (m + self.eps_hist[-1]) / 2
            return self.transfer(self.x_first, t + ratio, t, e)
        self.eps_hist = self.eps_hist[-3:] + [m]
        h = self.eps_hist
        if len(h) == 2:
            e = (3 * h[-1] - h[-2]) / 2
        elif len(h) == 3:
            e = (23 * h[-1] - 16 * h[-2] + 5 * h[-3]) / 12
        else:
            e = (55 * h[-1] - 59 * h[-2] + 37 * h[-3] - 9 * h[-4]) / 24
        return self.transfer(x, t, t - ratio, e)


class Ddim(Base):
    def set(self, n):
        self.n = n
        T = self.T
        if self.spacing == "linspace":
            ts = np.linspace(0, T - 1, n).round()[::-1]
        else:
            ts = spaced(self.spacing, T, n, self.offset)
        self.ts = [int(v) for v in ts]
        self.sigmas = [math.sqrt((1 - self.acp[t]) / self.acp[t]) for t in self.ts]
        self.init_sigma = 1.0
        self.final = 1.0 if self.cfg.get("set_alpha_to_one", True) else self.acp[0]
        self.clip = self.cfg.get("clip_sample", True)
        self.clip_range = self.cfg.get("clip_sample_range", 1.0)

    def step(self, m, i, x, rng):
        t = self.ts[i]
        tp = t - self.T // self.n
        a = self.acp[t]
        ap = self.acp[tp] if tp >= 0 else self.final
        if self.pred == "epsilon":
            x0, eps = (x - math.sqrt(1 - a) * m) / math.sqrt(a), m
        elif self.pred == "v_prediction":
            x0 = math.sqrt(a) * x - math.sqrt(1 - a) * m
            eps = math.sqrt(a) * m + math.sqrt(1 - a) * x
        else:
            x0, eps = m, (x - math.sqrt(a) * m) / math.sqrt(1 - a)
        if self.clip:
            x0 = np.clip(x0, -self.clip_range, self.clip_range)
        return math.sqrt(ap) * x0 + math.sqrt(1 - ap) * eps


class SigmaFamily(Base):
    """Euler / Euler ancestral / LMS: k-diffusion sigma parameterisation."""

    def set(self, n):
        self.n = n
        train = np.sqrt((1 - self.acp) / self.acp)
        ts = f32(spaced(self.spacing, self.T, n, self.offset))
        sig = np.interp(ts, np.arange(len(train)), train)
        karras_ok = self.name in ("euler", "lms")
        if karras_ok and self.cfg.get("use_karras_sigmas", False):
            smin = sig[-1]
            smax = sig[0]
            if self.name == "euler":
                smin = self.cfg.get("sigma_min") or smin
                smax = self.cfg.get("sigma_max") or smax
            sig = karras(smin, smax, n)
            ts = f32([sigma_to_t(s, np.log(train)) for s in sig])
        last = 0.0
        if self.name == "euler" and self.cfg.get("final_sigmas_type", "zero") == "sigma_min":
            last = train[0]
        self.sig = f32(np.concatenate([sig, [last]]))
        self.ts = list(ts)
        self.sigmas = list(self.sig)
        mx = self.sig.max()
        self.init_sigma = mx if self.spacing in ("linspace", "trailing") else float(
            f32(math.sqrt(mx * mx + 1)))
        self.derivs = []

    def input_scale(self, i):
        return 1.0 / math.sqrt(self.sig[i] ** 2 + 1)

    def x0(self, m, x, s):
        if self.pred == "epsilon":
            return x - s * m
        if self.pred == "v_prediction":
            return m * (-s / math.sqrt(s * s + 1)) + x / (s * s + 1)
        return m

    def step(self, m, i, x, rng):
        s, s_next = self.sig[i], self.sig[i + 1]
        d = (x - self.x0(m, x, s)) / s
        if self.name == "euler":
            return x + d * (s_next - s)
        if self.name == "euler_a":
            up = math.sqrt(s_next ** 2 * (s ** 2 - s_next ** 2) / s ** 2)
            down = math.sqrt(s_next ** 2 - up ** 2)
            noise = rng.randn(x.size).astype(np.float32).astype(np.float64)
            return x + d * (down - s) + noise * up
        # LMS: integrate the Lagrange polynomial through the last `order` sigmas exactly.
        self.derivs = (self.derivs + [d])[-4:]
        order = min(i + 1, 4)
        out = x.copy()
        for j in range(order):
            others = [self.sig[i - k] for k in range(order) if k != j]
            poly = np.poly1d([1.0])
            for o in others:
                poly = poly * np.poly1d([1.0, -o]) / (self.sig[i - j] - o)
            integ = poly.integ()
            coeff = integ(s_next) - integ(s)
            out = out + coeff * self.derivs[-1 - j]
        return out


class Dpm(Base):
    def set(self, n):
        self.n = n
        T = self.T
        train = np.sqrt((1 - self.acp) / self.acp)
        if self.spacing == "linspace":
            ts = np.linspace(0, T - 1, n + 1).round()[::-1][:-1]
        elif self.spacing == "leading":
            ratio = T // (n + 1)
            ts = (np.arange(0, n + 1) * ratio)[::-1][:-1] + self.offset
        else:
            ts = np.round(np.arange(T, 0, -T / n)) - 1
        ts = [float(v) for v in ts]
        karras_on = self.name == "dpmpp_2m_karras" or self.cfg.get("use_karras_sigmas", False)
        if karras_on:
            smin = self.cfg.get("sigma_min") or train[0]
            smax = self.cfg.get("sigma_max") or train[-1]
            sig = karras(smin, smax, n)
            ts = [float(round(sigma_to_t(s, np.log(train)))) for s in sig]
        else:
            sig = np.array([train[int(t)] for t in ts])
        last = 0.0 if self.cfg.get("final_sigmas_type", "zero") == "zero" else train[0]
        self.sig = f32(np.concatenate([sig, [last]]))
        self.ts = ts
        self.sigmas = list(self.sig)
        self.init_sigma = 1.0
        self.prev_x0 = None
        self.heun = self.cfg.get("solver_type", "midpoint") == "heun"

    @staticmethod
    def alpha_sigma(s):
        a = 1 / math.sqrt(s * s + 1)
        return a, s * a

    def step(self, m, i, x, rng):
        a0, s0 = self.alpha_sigma(self.sig[i])
        at, st = self.alpha_sigma(self.sig[i + 1])
        if self.pred == "epsilon":
            x0 = (x - s0 * m) / a0
        elif self.pred == "v_prediction":
            x0 = a0 * x - s0 * m
        else:
            x0 = m
        last = i == self.n - 1
        lower_final = last and (self.cfg.get("euler_at_final", False) or
                                (self.cfg.get("lower_order_final", True) and self.n < 15) or
                                self.cfg.get("final_sigmas_type", "zero") == "zero")
        prev = self.prev_x0
        self.prev_x0 = x0
        if st == 0:
            return x0  # the limit of the first-order update at sigma = 0
        lam_t, lam_0 = math.log(at / st), math.log(a0 / s0)
        h = lam_t - lam_0
        if prev is None or lower_final:
            return (st / s0) * x - at * (math.exp(-h) - 1) * x0
        a1, s1 = self.alpha_sigma(self.sig[i - 1])
        r0 = (lam_0 - math.log(a1 / s1)) / h
        d1 = (x0 - prev) / r0
        if self.heun:
            return (st / s0) * x - at * (math.exp(-h) - 1) * x0 + at * (
                (math.exp(-h) - 1) / h + 1) * d1
        return (st / s0) * x - at * (math.exp(-h) - 1) * x0 - 0.5 * at * (math.exp(-h) - 1) * d1


def make(name, cfg):
    if name == "pndm":
        return Pndm(cfg, name)
    if name == "ddim":
        return Ddim(cfg, name)
    if name in ("euler", "euler_a", "lms"):
        return SigmaFamily(cfg, name)
    return Dpm(cfg, name)


def model(x_in, t):
    k = np.arange(x_in.size)
    return 0.8 * np.tanh(x_in) + 0.2 * np.sin(0.37 * k + 0.013 * t)


def run(case):
    s = make(case["scheduler"], case.get("config", {}))
    s.set(case["steps"])
    out = {"timesteps": [float(t) for t in s.ts], "sigmas": [float(v) for v in s.sigmas],
           "init_noise_sigma": float(s.init_sigma)}
    loop = case.get("loop")
    if loop:
        n = loop["n"]
        rng = np.random.RandomState(loop.get("seed", 0))
        x = np.cos(1.3 * np.arange(n)) * s.init_sigma
        for i, t in enumerate(s.ts):
            m = model(x * s.input_scale(i), t)
            x = s.step(m, i, x, rng)
        out["sample"] = [float(v) for v in x]
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    json.dump([run(c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()
