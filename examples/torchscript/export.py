#!/usr/bin/env python3
"""Scripts two PyTorch models for packtune's torchscript family (docs/models.md#torchscript-modules)
and saves them beside this file:

  resnet18.pt  torchvision's ResNet-18, adapted to Fashion-MNIST's 1 x 28 x 28 images: a 3 x 3
               stem of one input channel with stride 2, then its max-pooling, so that its four
               stages see 7 x 7, 4 x 4, 2 x 2 and 1 x 1 (a stem of stride 1 would give each
               stage four times the pixels, and the 2-core CPU four times the work); 10 classes,
               11.2 million parameters.
  small.pt     a small custom nn.Module: two convolution blocks with batch norm, dropout and a
               linear classifier.

  python3 export.py            (Debian's python3-torch and python3-torchvision, PyTorch 1.13)

packtune trains each file from the weights it holds: the seed below fixes them. Loading a .pt
file runs the TorchScript code in it (docs/security.md).
"""
import os

import torch
import torchvision


class Small(torch.nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()

        def block(c_in: int, c_out: int) -> torch.nn.Sequential:
            return torch.nn.Sequential(
                torch.nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
                torch.nn.BatchNorm2d(c_out),
                torch.nn.ReLU(inplace=True),
                torch.nn.MaxPool2d(2),
            )

        self.features = torch.nn.Sequential(block(1, 32), block(32, 64))
        self.dropout = torch.nn.Dropout(0.25)
        self.classifier = torch.nn.Linear(64 * 7 * 7, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(torch.flatten(self.features(x), 1)))


def resnet18(classes: int = 10) -> torch.nn.Module:
    model = torchvision.models.resnet18(weights=None, num_classes=classes)
    model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=3, stride=2, padding=1, bias=False)
    return model


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    for name, model in (("resnet18", resnet18()), ("small", Small())):
        scripted = torch.jit.script(model)
        # What packtune checks before a run: a batch in, 10 logits per example out.
        assert scripted(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
        path = os.path.join(here, name + ".pt")
        scripted.save(path)
        parameters = sum(p.numel() for p in model.parameters())
        print(f"{path}: {parameters:,} parameters")


if __name__ == "__main__":
    main()
