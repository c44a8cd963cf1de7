"""The backend's own fuser methods."""


def fuse_linear_relu(is_qat, linear, relu):
    import torch.ao.nn.intrinsic as nni

    return nni.LinearReLU(linear, relu)
