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
public import Pldr.Decoding
public import Pldr.SoftmaxSimplex
public import Pldr.RopeTwirl
public import Pldr.DensityPsd
public import Pldr.LayerNorm
public import Pldr.RankOne
public import Pldr.HadamardPower
public import Pldr.ScorePerturbation
public import Pldr.DagLimit
public import Pldr.PrefixPipeline
public import Pldr.PrefixHead
public import Pldr.ExpHom
public import Pldr.RopeTwirlDecay
public import Pldr.LayerNormModel
public import Pldr.ExpRat
public import Pldr.PrefixHeadHom
public import Pldr.OrderParameter
public import Pldr.Float.Model
public import Pldr.Float.Sum
public import Pldr.Float.Softmax
public import Pldr.Float.Head
public import Pldr.Float.Ieee
public import Pldr.Float.Ftz
public import Pldr.Float.LayerNorm
public import Pldr.Float.Stages
public import Pldr.Float.Decoder
public import Pldr.Float.Hull

/-!
# Pldr: the PLGA theorem library

Root module. See `README.md` for the table theorem ID → Lean name → file.
-/
