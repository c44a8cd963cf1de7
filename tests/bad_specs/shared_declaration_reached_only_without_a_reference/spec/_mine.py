"""Broken on purpose: a shared op list declares a change, but only backends without a reference use it."""

from generator.dsl import changed, nn

MY_OPS = [nn.Linear, changed(nn.Conv2d, "our conv2d takes other dtypes")]  # <- error
