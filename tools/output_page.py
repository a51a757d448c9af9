"""The figures printed on the course's Output page, typed once from it.

The toy model was fitted to reproduce them (tools/fit_toy.py), and the tests check that
it does (tests/test_toy_model.py), each within TOL of its printed value.
"""
TOL = 5e-4                                      # a figure printed with 3 decimals

TEXT = "the cat climbed the"
Y5 = [-0.436, 1.551, -0.461, 1.698]             # the last block's output, last row
MEAN, SUM, STD = 0.588, 2.352, 1.038            # of y_5 (population std)
F5 = [-0.987, 0.928, -1.011, 1.069]             # LN(y_5)

# The last row, token by token: logit z, e^z, p.
LAST_ROW = {
    "the": (0, 1, 0.033), " the": (0.418, 1.519, 0.050), " cat": (0.634, 1.886, 0.062),
    " dog": (0.564, 1.757, 0.058), " climb": (-0.945, 0.389, 0.013), "ed": (0.410, 1.507, 0.049),
    " roof": (2.491, 12.069, 0.395), " wall": (1.463, 4.318, 0.141), " sofa": (0.999, 2.715, 0.089),
    " floor": (0.970, 2.637, 0.086), ".": (-2.056, 0.128, 0.004), "<|endoftext|>": (-0.518, 0.596, 0.020),
}
SUM_E = 30.521                                  # sum of e^z over the last row

# Every position predicts the token after it: (p(target), -ln p), rows 1 to 5;
# the target of the last row is " roof".
ROWS = [(0.500, 0.693), (0.444, 0.811), (0.274, 1.295), (0.311, 1.169), (0.395, 0.928)]
MEAN_LOSS = 0.979
UNIFORM_LOSS = 2.485                            # ln 12

ATTENTION_OFF = {" cat": 0.455, " dog": 0.143, " roof": 0.143}   # the last row's top three
