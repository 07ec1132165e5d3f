"""A script whose host code never ends (written for this suite): the command's wall-clock budget stops it."""

import torch

x = torch.zeros(4, device="cuda")
while True:
    x += 1
