"""Codesign studies: what a number format costs in silicon against what it does to a model.

Above the golden model (their arithmetic) and synthesis (their cost), below the command line:

- pareto.py: ``fpforge pareto``, the join of emulated quality and synthesised cost;
- roofline.py: what each configuration's MAC means for a transformer layer's speed;
- quality.py: QSNR at the tensor and dot-product level;
- digits.py, minilm.py: the model workloads (an MLP on scikit-learn's digits, all-MiniLM-L6-v2).
"""
