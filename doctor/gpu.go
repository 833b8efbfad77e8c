package doctor

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// DriverFix says how to make libnvidia-ml.so.1 loadable.
const DriverFix = "install the NVIDIA driver (its libnvidia-ml.so.1 comes with it), or add the directory holding the library to the loader's path (ldconfig or LD_LIBRARY_PATH)"

// gpuChecks are the driver, NVML and per-GPU checks. After a failed Init
// nothing else is called into the library.
func gpuChecks(lib nvml.Interface, o Options) []Check {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return []Check{{Name: "nvml", Status: StatusFail,
				Detail: fmt.Sprintf("%s not found: the NVIDIA driver's NVML library could not be loaded, so no GPU can be checked", o.NVMLLibrary),
				Fix:    DriverFix}}
		}
		return []Check{{Name: "nvml", Status: StatusFail,
			Detail: fmt.Sprintf("%s loaded but NVML did not initialise (%s)", o.NVMLLibrary, nvmlgpu.CodeName(ret)),
			Fix:    "check that the kernel module is loaded and matches the library (nvidia-smi shows the same error; a driver upgrade needs a reboot or module reload)"}}
	}
	defer lib.Shutdown()
	var out []Check
	version, ret := lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		out = append(out, Check{Name: "driver", Status: StatusFail, Detail: "NVML gives no driver version: " + nvmlgpu.CodeName(ret),
			Fix: "reinstall the NVIDIA driver"})
	} else {
		detail := "NVIDIA driver " + version
		if cuda, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
			detail += fmt.Sprintf(", CUDA %d.%d", cuda/1000, cuda%1000/10)
		}
		out = append(out, Check{Name: "driver", Status: StatusOK, Detail: detail})
	}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return append(out, Check{Name: "nvml", Status: StatusFail, Detail: "NVML cannot count GPUs: " + nvmlgpu.CodeName(ret),
			Fix: "run nvidia-smi to see the driver's own error"})
	}
	if count == 0 {
		return append(out, Check{Name: "nvml", Status: StatusFail, Detail: "NVML sees no GPU",
			Fix: "check that the GPUs are visible to this host (lspci) and to this process (a container needs the device nodes)"})
	}
	out = append(out, Check{Name: "nvml", Status: StatusOK, Detail: fmt.Sprintf("%s loaded, %d GPU(s)", o.NVMLLibrary, count)})
	capable := 0
	for i := 0; i < count; i++ {
		c, ok := gpuCheck(lib, i)
		out = append(out, c)
		if ok {
			capable++
		}
	}
	if capable == 0 {
		out = append(out, Check{Name: "mig", Status: StatusFail, Detail: "no GPU on this node supports MIG",
			Fix: "migpro needs MIG-capable GPUs (A30, A100, H100, H200 and later)"})
	}
	return out
}

// gpuCheck reports one GPU: its MIG capability, current and pending mode,
// and the MIG devices it has. ok is false when it cannot do MIG.
func gpuCheck(lib nvml.Interface, i int) (Check, bool) {
	name := fmt.Sprintf("gpu %d", i)
	h, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return Check{Name: name, Status: StatusFail, Detail: "NVML cannot open it: " + nvmlgpu.CodeName(ret),
			Fix: "run nvidia-smi -i " + fmt.Sprint(i) + " to see the driver's error"}, false
	}
	model, _ := h.GetName()
	uuid, _ := h.GetUUID()
	id := fmt.Sprintf("%s %s", model, uuid)
	cur, pending, ret := h.GetMigMode()
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return Check{Name: name, Status: StatusWarn, Detail: id + ": not MIG-capable", Fix: "migpro leaves this GPU alone"}, false
	}
	if ret != nvml.SUCCESS {
		return Check{Name: name, Status: StatusFail, Detail: id + ": MIG mode unreadable: " + nvmlgpu.CodeName(ret),
			Fix: "run nvidia-smi -i " + fmt.Sprint(i) + " -q -d MIG"}, false
	}
	mode := func(m int) string {
		if m == nvml.DEVICE_MIG_ENABLE {
			return "on"
		}
		return "off"
	}
	detail := fmt.Sprintf("%s: MIG-capable, MIG mode %s, pending %s", id, mode(cur), mode(pending))
	if cur == nvml.DEVICE_MIG_ENABLE {
		detail += fmt.Sprintf(", %d MIG device(s)", migDeviceCount(h))
	}
	switch {
	case cur != pending:
		return Check{Name: name, Status: StatusWarn, Detail: detail,
			Fix: fmt.Sprintf("the pending mode takes effect after a GPU reset (nvidia-smi -i %d -r, with no process on the GPU) or a reboot", i)}, true
	case cur != nvml.DEVICE_MIG_ENABLE:
		return Check{Name: name, Status: StatusWarn, Detail: detail,
			Fix: fmt.Sprintf("to let migpro use it, enable MIG as an admin: nvidia-smi -i %d -mig 1 (doctor changes nothing)", i)}, true
	}
	return Check{Name: name, Status: StatusOK, Detail: detail}, true
}

func migDeviceCount(h nvml.Device) int {
	n, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return 0
	}
	found := 0
	for j := 0; j < n; j++ {
		if _, ret := h.GetMigDeviceHandleByIndex(j); ret == nvml.SUCCESS {
			found++
		}
	}
	return found
}
