module

public section
namespace Cheats

theorem c_wrong : 1 + 1 = 3 := by decide

end Cheats
end
