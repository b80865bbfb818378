module

/-!
# Finite sums over `Fin n`

Core Lean has no `Finset.sum`, so this file builds the one summation operator the
library needs: `Pldr.finSum f = f 0 + f 1 + ⋯ + f (n-1)` for `f : Fin n → α`, defined by
recursion on `n` (peeling off the last index), with the lemmas that matrix algebra needs:
linearity, scaling on either side, exchange of two sums, the "single nonzero term" rule
(which makes the identity matrix work), splitting a sum over `Fin (m + t)` into a prefix
and a suffix (used for causal prefixes), and regrouping a sum over `Fin (2 * k)` into
planes `(2p, 2p+1)` (used for block-diagonal RoPE), and a constant sum is `n * c`. A second group of lemmas needs an
ordered ring: sums of nonnegative terms are nonnegative, and sums are monotone.

(No `∑` notation is exported: custom notation cannot cross module boundaries in the
WebAssembly Lean build this project uses, so sums are written `finSum fun i => f i`.)

Everything here is proved from the ring laws of `Lean.Grind.CommRing` (and of
`Lean.Grind.OrderedRing` for the order lemmas); there are no unproved assumptions.
-/

public section

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u}

/-- The sum `f 0 + f 1 + ⋯ + f (n-1)` of a function on `Fin n`, by recursion on `n`:
the empty sum is `0`, and a sum over `Fin (n+1)` is the sum over the first `n` indices
plus the last term. -/
@[expose] def finSum [Lean.Grind.CommRing α] : {n : Nat} → (Fin n → α) → α
  | 0, _ => 0
  | _ + 1, f => finSum (fun i => f i.castSucc) + f (Fin.last _)

section CommRing

variable [Lean.Grind.CommRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- The empty sum is zero. -/
@[simp] theorem finSum_zero_len (f : Fin 0 → α) : finSum f = 0 := rfl

/-- Peel off the last term of a sum over `Fin (n+1)`. -/
theorem finSum_succ {n : Nat} (f : Fin (n + 1) → α) :
    finSum f = finSum (fun i : Fin n => f i.castSucc) + f (Fin.last n) := rfl

/-- A sum over `Fin 1` is its only term. -/
@[simp] theorem finSum_one (f : Fin 1 → α) : finSum f = f 0 := by
  simp only [finSum]; rw [Lean.Grind.AddCommMonoid.zero_add]; rfl

/-- A sum over `Fin 2` is the sum of its two terms. -/
theorem finSum_two (f : Fin 2 → α) : finSum f = f 0 + f 1 := by
  simp only [finSum]; rw [Lean.Grind.AddCommMonoid.zero_add]; rfl

/-- The sum of zeros is zero. -/
@[simp] theorem finSum_zero {n : Nat} : finSum (fun _ : Fin n => (0 : α)) = 0 := by
  induction n with
  | zero => rfl
  | succ n ih => rw [finSum_succ, ih]; grind

/-- A sum whose terms all vanish is zero. -/
theorem finSum_eq_zero {n : Nat} {f : Fin n → α} (h : ∀ i, f i = 0) : finSum f = 0 := by
  have : f = fun _ => 0 := funext h
  subst this; exact finSum_zero

/-- Sums are additive. -/
theorem finSum_add {n : Nat} (f g : Fin n → α) :
    finSum (fun i => f i + g i) = finSum f + finSum g := by
  induction n with
  | zero => simp; grind
  | succ n ih => rw [finSum_succ, finSum_succ f, finSum_succ g, ih]; grind

/-- Sums commute with negation. -/
theorem finSum_neg {n : Nat} (f : Fin n → α) : finSum (fun i => -f i) = -finSum f := by
  induction n with
  | zero => simp; grind
  | succ n ih => rw [finSum_succ, finSum_succ f, ih]; grind

/-- Sums commute with subtraction. -/
theorem finSum_sub {n : Nat} (f g : Fin n → α) :
    finSum (fun i => f i - g i) = finSum f - finSum g := by
  have h : (fun i => f i - g i) = fun i => f i + -g i := funext fun i => by grind
  rw [h, finSum_add, finSum_neg]; grind

/-- A constant factor on the left comes out of a sum. -/
theorem mul_finSum {n : Nat} (c : α) (f : Fin n → α) :
    c * finSum f = finSum (fun i => c * f i) := by
  induction n with
  | zero => simp; grind
  | succ n ih => rw [finSum_succ, finSum_succ (fun i => c * f i), ← ih]; grind

/-- A constant factor on the right comes out of a sum. -/
theorem finSum_mul {n : Nat} (f : Fin n → α) (c : α) :
    finSum f * c = finSum (fun i => f i * c) := by
  induction n with
  | zero => simp; grind
  | succ n ih => rw [finSum_succ, finSum_succ (fun i => f i * c), ← ih]; grind

/-- Two finite sums can be exchanged (Fubini for finite sums). -/
theorem finSum_comm {m n : Nat} (f : Fin m → Fin n → α) :
    finSum (fun i => finSum (fun j => f i j)) = finSum (fun j => finSum (fun i => f i j)) := by
  induction m with
  | zero => simp
  | succ m ih =>
    rw [finSum_succ, ih]
    have h : (fun j => finSum (fun i : Fin (m + 1) => f i j)) =
        fun j => finSum (fun i : Fin m => f i.castSucc j) + f (Fin.last m) j :=
      funext fun j => finSum_succ _
    rw [h, finSum_add]

/-- No `castSucc` index is the last index. -/
theorem castSucc_ne_last {n : Nat} (i : Fin n) : i.castSucc ≠ Fin.last n := fun h => by
  have := Fin.castSucc_lt_last i
  rw [h] at this
  exact Nat.lt_irrefl _ this

/-- Single nonzero term: summing `if i = j then f i else 0` over `i` picks out `f j`.
This is what makes the identity matrix an identity. -/
theorem finSum_ite_eq {n : Nat} (j : Fin n) (f : Fin n → α) :
    finSum (fun i => if i = j then f i else 0) = f j := by
  induction n with
  | zero => exact j.elim0
  | succ n ih =>
    rw [finSum_succ]
    induction j using Fin.lastCases with
    | last =>
      have h : (fun i : Fin n => if i.castSucc = Fin.last n then f i.castSucc else 0) =
          fun _ => 0 := funext fun i => by
        have : i.castSucc ≠ Fin.last n := castSucc_ne_last i
        simp [this]
      rw [h, finSum_zero]; simp; grind
    | cast j =>
      have h : (fun i : Fin n => if i.castSucc = j.castSucc then f i.castSucc else 0) =
          fun i => if i = j then f i.castSucc else 0 := funext fun i => by
        simp [Fin.castSucc_inj]
      rw [h, ih j (fun i => f i.castSucc)]
      have : Fin.last n ≠ j.castSucc := fun h => castSucc_ne_last j h.symm
      simp [this]; grind

/-- Single nonzero term, with the equality written the other way round. -/
theorem finSum_ite_eq' {n : Nat} (j : Fin n) (f : Fin n → α) :
    finSum (fun i => if j = i then f i else 0) = f j := by
  have h : (fun i => if j = i then f i else 0) = fun i => if i = j then f i else 0 :=
    funext fun i => by
      by_cases h : i = j
      · subst h; simp
      · have h' : ¬ j = i := fun e => h e.symm
        simp [h, h']
  rw [h, finSum_ite_eq]

/-- A sum over `Fin (m + t)` splits into the first `m` terms and the last `t` terms. -/
theorem finSum_append {m : Nat} : ∀ {t : Nat} (f : Fin (m + t) → α),
    finSum f = finSum (fun i : Fin m => f (Fin.castAdd t i)) +
      finSum (fun j : Fin t => f (Fin.natAdd m j))
  | 0, f => by simp; grind
  | t + 1, f => by
    rw [finSum_succ (n := m + t), finSum_append (t := t), finSum_succ (n := t)]
    have h1 : (fun i : Fin m => f (Fin.castSucc (Fin.castAdd t i))) =
        fun i => f (Fin.castAdd (t + 1) i) := rfl
    have h2 : (fun j : Fin t => f (Fin.castSucc (Fin.natAdd m j))) =
        fun j => f (Fin.natAdd m j.castSucc) := rfl
    have h3 : f (Fin.last (m + t)) = f (Fin.natAdd m (Fin.last t)) := rfl
    rw [h1, h2, h3]; grind

/-- The index `2p + b` of coordinate `b ∈ {0, 1}` of plane `p` in a space of dimension
`2k` (planes are formed by adjacent coordinates, as in RoPE). -/
@[expose] def planeIdx {k : Nat} (p : Fin k) (b : Fin 2) : Fin (2 * k) :=
  ⟨2 * p.val + b.val, by have := p.isLt; have := b.isLt; omega⟩

/-- A sum over `Fin (2k)` regrouped plane by plane: `∑ i f i = ∑ p (f (2p) + f (2p+1))`. -/
theorem finSum_planes : ∀ {k : Nat} (f : Fin (2 * k) → α),
    finSum f = finSum (fun p : Fin k => f (planeIdx p 0) + f (planeIdx p 1))
  | 0, f => rfl
  | k + 1, f => by
    have e : finSum f = finSum (n := 2 * k + 2) f := rfl
    rw [e, finSum_succ, finSum_succ, finSum_succ (n := k), finSum_planes (k := k),
      Lean.Grind.Semiring.add_assoc]
    rfl

/-- A constant sum over `Fin n` is `n * c`. -/
theorem finSum_const {n : Nat} (c : α) : finSum (fun _ : Fin n => c) = (n : α) * c := by
  induction n with
  | zero => simp; grind
  | succ n ih => rw [finSum_succ, ih]; grind

end CommRing

section Ordered

variable [Lean.Grind.CommRing α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [Lean.Grind.OrderedRing α]

/-- A sum of nonnegative terms is nonnegative. -/
theorem finSum_nonneg {n : Nat} {f : Fin n → α} (h : ∀ i, 0 ≤ f i) : 0 ≤ finSum f := by
  induction n with
  | zero => simp; grind
  | succ n ih =>
    rw [finSum_succ]
    have h1 := ih (fun i => h i.castSucc)
    have h2 := h (Fin.last n)
    grind

/-- Sums are monotone in their terms. -/
theorem finSum_le_finSum {n : Nat} {f g : Fin n → α} (h : ∀ i, f i ≤ g i) :
    finSum f ≤ finSum g := by
  induction n with
  | zero => simp; grind
  | succ n ih =>
    rw [finSum_succ, finSum_succ g]
    have h1 := ih (fun i => h i.castSucc)
    have h2 := h (Fin.last n)
    grind

end Ordered

end Pldr

end
