// Package harness starts and stops the real container engines the e2e tests
// drive: podman, a private containerd, a kubelet (standalone or joined to a
// one-node control plane), all set up by `make e2e-deps` (docs/e2e.md). Every helper takes a testing.TB, fails the
// test with context when something is missing or broken, and undoes what it
// did with t.Cleanup. Tests that use it carry the `e2e` build tag and run as
// root.
//
// # Podman
//
//	p := harness.Podman(t)                 // runc + ulimits via CONTAINERS_CONF
//	root := harness.BusyboxRootfs(t)       // static busybox and its applets
//	r := p.RunRootfs(t, root, harness.DeviceFlags("migpro.dev/mig=x"), "sh", "-c", "env")
//	r.Stdout, r.Stderr, r.ExitCode; r.Must(t) fails t on a non-zero exit
//	p.Run(t, args...)                      // any other podman command
//
// # containerd
//
//	c := harness.StartContainerd(t)        // own root/state/socket/config, CRI with CDI
//	c.Socket, c.Client (*client.Client), c.Context(ns)
//	c.ImportArchive(t, ns, harness.BusyboxImage(t))   // import + unpack (overlayfs)
//	c.RunTask(t, ns, id, harness.BusyboxImageName,
//		oci.WithProcessArgs("sh", "-c", "env"), cdi.WithCDIDevices(name))  // Result
//	c.Ctr(t, append([]string{"-n", ns, "run", "--rm"}, c.CtrRunFlags()...)...)
//	c.RuntimeOpt()                         // runc options for your own NewContainer
//	c.RemoveContainers(t, ns)
//
// The Go client's cdi.WithCDIDevices and ctr resolve CDI names on the client
// side from the process-wide CDI cache: /etc/cdi and /var/run/cdi, or the
// directories given to ConfigureCDI. The CRI plugin (kubelet path) reads the
// directories given to WithCDISpecDirs.
//
// # kubelet
//
//	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c})
//	c.ImportArchive(t, "k8s.io", harness.BusyboxImage(t))
//	k.WriteStaticPod(t, "p1", manifestYAML)   // atomic; pod shows as k.PodName("p1")
//	k.WaitPodRunning(t, "p1", time.Minute)    // corev1.Pod from https://<k.Address>:10250/pods
//	k.ContainerLog(t, "p1", "main")           // what the container printed
//	k.RemoveStaticPod(t, "p1"); k.WaitPodGone(t, "p1", time.Minute)
//	k.Restart(t)                              // kubelet.sock is recreated
//	k.Pods(), k.Pod(name), k.PodResourcesSocket(), k.Log()
//
// Device plugins register on KubeletSocket and serve sockets in
// DevicePluginDir (a fixed path, cleared before the kubelet starts, so start
// plugins after the kubelet; they must retry Register). Only one
// kubelet runs on a machine at a time: StartKubelet takes a file lock, also
// across test processes. Test pods need hostNetwork: true and
// imagePullPolicy: Never.
//
// # A control plane
//
//	cl := harness.StartCluster(t)          // etcd, apiserver, controller-manager, scheduler
//	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
//	cl.WaitNodeReady(t, k.NodeName, time.Minute)
//	cl.Client (admin clientset), cl.Server, cl.Kubeconfig, cl.Kubectl(t, args...)
//	cl.UserKubeconfig(t, "agent", "system:serviceaccount:...", groups...)  // own identity
//
// # Images, CDI specs and device nodes
//
// PauseImage and BusyboxImage return OCI archives (named PauseImageName and
// BusyboxImageName) built once per process; WriteOCIArchive makes others.
// WriteCDISpec writes a spec into CDIDir (or a given dir) and removes it at
// the end; podman 4.3 reads only cdiVersion <= 0.5.0. Mknod makes a char
// device node, e.g. 195:0: inside a container `cat` on it fails with "No such
// device or address" when the device cgroup allows it and "Operation not
// permitted" when it does not.
//
// Binaries come from CacheDir()/bin (see Bin); RequireRoot fails a test that
// does not run as root.
package harness
