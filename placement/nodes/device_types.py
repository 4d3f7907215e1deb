"""The devices a node's topology may hold, and the bounds that keep the work a
topology document can ask for finite."""

DEVICE_TYPES = ("gpu", "rdma", "fpga")
MAX_DEVICES = 256  # devices of one node
MAX_NVLINKS = 18  # links between two GPUs (NV18)
MAX_LISTED_VFS = 256  # VFs of one NIC listed one by one (each an inventory of the NIC)
