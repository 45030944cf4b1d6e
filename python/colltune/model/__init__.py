"""Stage 3, the cost model: predictions from p2p.json, the split-tree model, their validation
against measurements, and the model's report section."""
