module

public import Pldr.Algebra.Sum
public import Pldr.Algebra.Matrix
public import Pldr.Attention
public import Pldr.SdpaSpecialCase
public import Pldr.Softmax
public import Pldr.Prefix
public import Pldr.Collapse
public import Pldr.Rope
public import Pldr.RopeCommutant
public import Pldr.Positivity

/-!
# Pldr: the PLGA theorem library

Root module. See `README.md` for the table theorem ID → Lean name → file.
-/
