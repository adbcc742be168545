package deploytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/internal/telemetry"
	"github.com/evalgate/evalgate/worker"
)

var root = filepath.Join("..", "..")

// drain is the longest a worker takes to stop after SIGTERM besides the
// scoring of a task in flight: settling the tasks it holds, then closing
// its connection (jsq.Conn.Close waits up to 5 s for the drain).
const drain = worker.SettleTimeout + 5*time.Second

// Kubernetes objects, with the fields the tests read.
type (
	object struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Metadata   metadata `yaml:"metadata"`
		Data       map[string]string
		StringData map[string]string `yaml:"stringData"`
		Spec       yaml.Node
		// Kustomization
		Namespace string
		Resources []string

		file string
	}
	metadata struct {
		Name         string
		GenerateName string `yaml:"generateName"`
		Labels       map[string]string
		Annotations  map[string]string
	}
	workloadSpec struct {
		Replicas    *int
		ServiceName string `yaml:"serviceName"`
		Selector    struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		}
		Template struct {
			Metadata metadata
			Spec     podSpec
		}
	}
	podSpec struct {
		TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
		Containers                    []container
		Volumes                       []struct {
			Name      string
			ConfigMap *struct {
				Name string
			} `yaml:"configMap"`
			EmptyDir *struct{} `yaml:"emptyDir"`
		}
	}
	container struct {
		Name, Image   string
		Command, Args []string
		Env           []envVar
		EnvFrom       []struct {
			SecretRef *struct {
				Name     string
				Optional bool
			} `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Ports []struct {
			Name          string
			ContainerPort int `yaml:"containerPort"`
		}
		ReadinessProbe *probe `yaml:"readinessProbe"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		StartupProbe   *probe `yaml:"startupProbe"`
		Resources      struct {
			Requests, Limits map[string]string
		}
		SecurityContext *struct {
			ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	envVar struct {
		Name, Value string
		ValueFrom   *struct {
			SecretKeyRef *struct {
				Name, Key string
			} `yaml:"secretKeyRef"`
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	}
	probe struct {
		HTTPGet *struct {
			Path string
			Port string
		} `yaml:"httpGet"`
	}
	serviceSpec struct {
		ClusterIP string `yaml:"clusterIP"`
		Selector  map[string]string
		Ports     []struct {
			Name       string
			Port       int
			TargetPort string `yaml:"targetPort"`
		}
	}
	scaledObjectSpec struct {
		ScaleTargetRef struct {
			Name string
		} `yaml:"scaleTargetRef"`
		MinReplicaCount *int `yaml:"minReplicaCount"`
		Triggers        []struct {
			Type     string
			Metadata map[string]string
		}
	}
)

func (p *probe) String() string {
	if p == nil || p.HTTPGet == nil {
		return "none"
	}
	return "GET " + p.HTTPGet.Path + " on port " + p.HTTPGet.Port
}

func (e *envVar) String() string {
	switch {
	case e == nil:
		return "unset"
	case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
		return "from Secret " + e.ValueFrom.SecretKeyRef.Name + " key " + e.ValueFrom.SecretKeyRef.Key
	case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
		return "from field " + e.ValueFrom.FieldRef.FieldPath
	}
	return strconv.Quote(e.Value)
}

func (o *object) name() string { return cmpOr(o.Metadata.Name, o.Metadata.GenerateName) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// manifests parses every document of every YAML file in deploy/kubernetes.
func manifests(t *testing.T) []*object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "kubernetes", "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("manifests: %v, %d files", err, len(files))
	}
	var out []*object
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(false)
		for i := 1; ; i++ {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i, err)
			}
			o.file = filepath.Base(f)
			if o.APIVersion == "" || o.Kind == "" || (o.Kind != "Kustomization" && o.name() == "") {
				t.Fatalf("%s, document %d: apiVersion %q, kind %q, name %q: not a Kubernetes object", f, i, o.APIVersion, o.Kind, o.name())
			}
			out = append(out, &o)
		}
	}
	return out
}

// find returns the one object of kind and name.
func find(t *testing.T, objs []*object, kind, name string) *object {
	t.Helper()
	var found *object
	for _, o := range objs {
		if o.Kind == kind && o.name() == name {
			if found != nil {
				t.Fatalf("%s %s defined twice (%s, %s)", kind, name, found.file, o.file)
			}
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s %s in deploy/kubernetes", kind, name)
	}
	return found
}

func decodeSpec[T any](t *testing.T, o *object) *T {
	t.Helper()
	var spec T
	if err := o.Spec.Decode(&spec); err != nil {
		t.Fatalf("%s %s (%s): spec: %v", o.Kind, o.name(), o.file, err)
	}
	return &spec
}

func onlyContainer(t *testing.T, o *object, w *workloadSpec) *container {
	t.Helper()
	if len(w.Template.Spec.Containers) != 1 {
		t.Fatalf("%s %s: %d containers, want 1", o.Kind, o.name(), len(w.Template.Spec.Containers))
	}
	return &w.Template.Spec.Containers[0]
}

func (c *container) env(name string) *envVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// flag returns the value after --name in args.
func flag(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func (c *container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// The NATS users' Secret, and the env var of each user's password.
const usersSecret = "evalgate-nats-users"

func passwordKey(r jsq.Role) string { return string(r) + "-password" }

// checkEvalgateContainer checks what every evalgate container shares: the
// role's user and password from the Secret, the NATS URL on the client
// Service, and the metrics listener on telemetry.Port.
func checkEvalgateContainer(t *testing.T, objs []*object, o *object, w *workloadSpec, role jsq.Role) *container {
	t.Helper()
	c := onlyContainer(t, o, w)
	where := o.Kind + " " + o.name()
	if u := c.env("EVALGATE_NATS_USER"); u == nil || u.Value != string(role) {
		t.Errorf("%s: EVALGATE_NATS_USER %s, want %q", where, u, role)
	}
	pw := c.env("EVALGATE_NATS_PASSWORD")
	if pw == nil || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil ||
		*pw.ValueFrom.SecretKeyRef != (struct{ Name, Key string }{usersSecret, passwordKey(role)}) {
		t.Errorf("%s: EVALGATE_NATS_PASSWORD %s, want key %s of Secret %s", where, pw, passwordKey(role), usersSecret)
	}
	u, err := url.Parse(flag(c.Args, "nats"))
	if err != nil || u.Scheme != "nats" {
		t.Fatalf("%s: --nats %q: %v", where, flag(c.Args, "nats"), err)
	}
	svc := decodeSpec[serviceSpec](t, find(t, objs, "Service", u.Hostname()))
	if !slices.ContainsFunc(svc.Ports, func(p struct {
		Name       string
		Port       int
		TargetPort string `yaml:"targetPort"`
	}) bool {
		return strconv.Itoa(p.Port) == u.Port() && p.Name == "client"
	}) {
		t.Errorf("%s: --nats %s: Service %s has no client port %s", where, u, u.Hostname(), u.Port())
	}
	if got, want := flag(c.Args, "metrics-listen"), net.JoinHostPort("0.0.0.0", strconv.Itoa(telemetry.Port)); got != want {
		t.Errorf("%s: --metrics-listen %q, want %q", where, got, want)
	}
	if c.port("metrics") != telemetry.Port {
		t.Errorf("%s: container port metrics %d, want %d", where, c.port("metrics"), telemetry.Port)
	}
	a := w.Template.Metadata.Annotations
	if a["prometheus.io/port"] != strconv.Itoa(telemetry.Port) || a["prometheus.io/path"] != telemetry.PathMetrics {
		t.Errorf("%s: scrape annotations %v, want port %d, path %s", where, a, telemetry.Port, telemetry.PathMetrics)
	}
	for _, k := range []string{"cpu", "memory"} {
		if c.Resources.Requests[k] == "" {
			t.Errorf("%s: no %s request", where, k)
		}
	}
	if c.Resources.Limits["memory"] == "" {
		t.Errorf("%s: no memory limit", where)
	}
	return c
}

func TestManifestsParseAndKustomizationListsThem(t *testing.T) {
	objs := manifests(t)
	k := find(t, objs, "Kustomization", "")
	files := map[string]bool{}
	for _, o := range objs {
		files[o.file] = true
	}
	for _, r := range k.Resources {
		if !files[r] {
			t.Errorf("kustomization.yaml lists %s, which is not in deploy/kubernetes", r)
		}
		delete(files, r)
	}
	delete(files, "kustomization.yaml")
	delete(files, "coordinator-job.yaml") // a template, created once per evaluation
	delete(files, "secret.yaml")          // applied once, by hand: never over the real passwords
	if len(files) > 0 {
		t.Errorf("kustomization.yaml does not list %v", files)
	}
	if k.Namespace == "" {
		t.Error("kustomization.yaml sets no namespace")
	}
}

func TestWorkerDeployment(t *testing.T) {
	objs := manifests(t)
	o := find(t, objs, "Deployment", "evalgate-worker")
	w := decodeSpec[workloadSpec](t, o)
	c := checkEvalgateContainer(t, objs, o, w, jsq.RoleWorker)
	if len(c.Args) == 0 || !slices.Contains(c.Args, "worker") {
		t.Errorf("worker args %q do not run `evalgate worker`", c.Args)
	}
	for name, p := range map[string]*probe{telemetry.PathReady: c.ReadinessProbe, telemetry.PathHealth: c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port != "metrics" {
			t.Errorf("worker probe %s, want GET %s on the metrics port", p, name)
		}
	}
	if g := w.Template.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < drain+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds too short or unset: the worker's drain takes up to %s, plus the task being scored", drain)
	}
	if c.Resources.Limits["cpu"] == "" {
		t.Error("worker: no CPU limit (its slots follow it through GOMAXPROCS)")
	}
	if !labelsMatch(w.Selector.MatchLabels, w.Template.Metadata.Labels) {
		t.Errorf("worker selector %v does not select its pods %v", w.Selector.MatchLabels, w.Template.Metadata.Labels)
	}
}

func TestCoordinatorJob(t *testing.T) {
	objs := manifests(t)
	o := find(t, objs, "Job", "evalgate-run-")
	w := decodeSpec[workloadSpec](t, o)
	c := checkEvalgateContainer(t, objs, o, w, jsq.RoleCoordinator)
	if !slices.Contains(c.Args, "run") || flag(c.Args, "workers") != "0" {
		t.Errorf("coordinator args %q: want `evalgate run --workers 0`", c.Args)
	}
	nats := decodeSpec[workloadSpec](t, find(t, objs, "StatefulSet", "evalgate-nats"))
	if flag(c.Args, "replicas") != strconv.Itoa(*nats.Replicas) {
		t.Errorf("coordinator --replicas %q, want the %d NATS nodes", flag(c.Args, "replicas"), *nats.Replicas)
	}
	if c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem {
		tmp := c.env("TMPDIR")
		if tmp == nil || !slices.ContainsFunc(c.VolumeMounts, func(m struct {
			Name      string
			MountPath string `yaml:"mountPath"`
		}) bool {
			return m.MountPath == tmp.Value
		}) {
			t.Error("coordinator: a read-only root file system needs TMPDIR on a volume (interleaved runs are regrouped there)")
		}
	}
}

func TestNATSStatefulSet(t *testing.T) {
	objs := manifests(t)
	o := find(t, objs, "StatefulSet", "evalgate-nats")
	s := decodeSpec[workloadSpec](t, o)
	c := onlyContainer(t, o, s)
	// The image is the nats-server release the module is built with.
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github.com/nats-io/nats-server/v2 v(\S+)`).FindSubmatch(mod)
	if m == nil || c.Image != "nats:"+string(m[1])+"-alpine" {
		t.Errorf("NATS image %s, want nats:%s-alpine (go.mod)", c.Image, m[1])
	}
	for _, r := range jsq.Roles {
		e := c.env(jsq.PasswordEnv(r))
		if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Key != passwordKey(r) ||
			e.ValueFrom.SecretKeyRef.Name != usersSecret {
			t.Errorf("NATS node: %s %s, want key %s of Secret %s", jsq.PasswordEnv(r), e, passwordKey(r), usersSecret)
		}
	}
	if e := c.env("POD_NAME"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("NATS node: POD_NAME %s, want the pod's name (server_name)", e)
	}
	cm := find(t, objs, "ConfigMap", "evalgate-nats-config")
	conf := cm.Data["nats.conf"]
	for _, want := range []string{"server_name: $POD_NAME", "include ./evalgate.conf", "http_port: " + strconv.Itoa(c.port("monitor")),
		"listen: 0.0.0.0:" + strconv.Itoa(c.port("client")), "listen: 0.0.0.0:" + strconv.Itoa(c.port("cluster"))} {
		if !strings.Contains(conf, want) {
			t.Errorf("nats.conf has no %q", want)
		}
	}
	for i := range *s.Replicas {
		route := fmt.Sprintf("nats://%s-%d.%s:%d", o.name(), i, s.ServiceName, c.port("cluster"))
		if !strings.Contains(conf, route) {
			t.Errorf("nats.conf has no route %s", route)
		}
	}
	headless := decodeSpec[serviceSpec](t, find(t, objs, "Service", s.ServiceName))
	if headless.ClusterIP != "None" || !labelsMatch(headless.Selector, s.Template.Metadata.Labels) {
		t.Errorf("Service %s: clusterIP %q, selector %v: want a headless service of the NATS pods", s.ServiceName, headless.ClusterIP, headless.Selector)
	}
	// The configuration's users are the printed ones.
	want, _, err := jsq.ServerConfig(jsq.ConfigOptions{StoreDir: "/data", FromEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["evalgate.conf"] != want {
		t.Errorf("evalgate.conf in ConfigMap %s is not `evalgate server --print-config --store /data --env-passwords`; print it again", cm.name())
	}
	var mounted bool
	for _, v := range s.Template.Spec.Volumes {
		mounted = mounted || v.ConfigMap != nil && v.ConfigMap.Name == cm.name()
	}
	if !mounted || c.Command[len(c.Command)-1] != "/etc/nats/nats.conf" {
		t.Errorf("the NATS node does not read ConfigMap %s as /etc/nats/nats.conf: %q", cm.name(), c.Command)
	}
	for _, p := range []*probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || !strings.HasPrefix(p.HTTPGet.Path, "/healthz") || p.HTTPGet.Port != "monitor" {
			t.Errorf("NATS probe %s, want nats-server's /healthz on the monitor port", p)
		}
	}
}

func TestSecrets(t *testing.T) {
	objs := manifests(t)
	s := find(t, objs, "Secret", usersSecret)
	for _, r := range jsq.Roles {
		if s.StringData[passwordKey(r)] == "" {
			t.Errorf("Secret %s has no %s", usersSecret, passwordKey(r))
		}
	}
	// Every secret reference names this Secret and one of its keys, or an
	// optional Secret.
	for _, o := range objs {
		if o.Kind != "Deployment" && o.Kind != "StatefulSet" && o.Kind != "Job" {
			continue
		}
		for _, c := range decodeSpec[workloadSpec](t, o).Template.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				if ref := e.ValueFrom.SecretKeyRef; ref.Name != usersSecret || s.StringData[ref.Key] == "" {
					t.Errorf("%s %s: %s from Secret %s key %s, which does not exist", o.Kind, o.name(), e.Name, ref.Name, ref.Key)
				}
			}
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil && e.SecretRef.Name != usersSecret && !e.SecretRef.Optional {
					t.Errorf("%s %s: envFrom Secret %s is not defined here and not optional", o.Kind, o.name(), e.SecretRef.Name)
				}
			}
		}
	}
}

func TestKEDAScalesTheWorkersOnTheTaskConsumer(t *testing.T) {
	objs := manifests(t)
	so := decodeSpec[scaledObjectSpec](t, find(t, objs, "ScaledObject", "evalgate-worker"))
	find(t, objs, "Deployment", so.ScaleTargetRef.Name)
	if len(so.Triggers) != 1 || so.Triggers[0].Type != "nats-jetstream" {
		t.Fatalf("triggers %+v, want one nats-jetstream trigger", so.Triggers)
	}
	m := so.Triggers[0].Metadata
	for key, want := range map[string]string{"stream": jsq.StreamTasks, "consumer": jsq.ConsumerWorkers, "account": jsq.Account} {
		if m[key] != want {
			t.Errorf("trigger %s %q, want %q", key, m[key], want)
		}
	}
	if n, err := strconv.Atoi(m["lagThreshold"]); err != nil || n < 1 {
		t.Errorf("lagThreshold %q", m["lagThreshold"])
	}
	// The monitoring endpoint: the NATS Service in the namespace, on the
	// port nats.conf serves monitoring on.
	host, port, err := net.SplitHostPort(m["natsServerMonitoringEndpoint"])
	if err != nil {
		t.Fatal(err)
	}
	labels := strings.Split(host, ".")
	ns := find(t, objs, "Kustomization", "").Namespace
	if len(labels) < 2 || labels[1] != ns {
		t.Errorf("monitoring endpoint %s: not in namespace %s", host, ns)
	}
	svc := decodeSpec[serviceSpec](t, find(t, objs, "Service", labels[0]))
	ok := false
	for _, p := range svc.Ports {
		ok = ok || p.Name == "monitor" && strconv.Itoa(p.Port) == port
	}
	if !ok {
		t.Errorf("Service %s has no monitor port %s", labels[0], port)
	}
	if !strings.Contains(find(t, objs, "ConfigMap", "evalgate-nats-config").Data["nats.conf"], "http_port: "+port) {
		t.Errorf("nats.conf does not serve monitoring on %s", port)
	}
}

// TestServicesSelectPods: every Service selects the pods of a workload.
func TestServicesSelectPods(t *testing.T) {
	objs := manifests(t)
	for _, o := range objs {
		if o.Kind != "Service" {
			continue
		}
		sel := decodeSpec[serviceSpec](t, o).Selector
		ok := false
		for _, w := range objs {
			if w.Kind == "StatefulSet" || w.Kind == "Deployment" {
				ok = ok || labelsMatch(sel, decodeSpec[workloadSpec](t, w).Template.Metadata.Labels)
			}
		}
		if !ok {
			t.Errorf("Service %s selects no pods (%v)", o.name(), sel)
		}
	}
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestEnvironmentVariablesExist: every EVALGATE_ variable the deployment
// files set is one the code reads: a flag's variable or os.Getenv in
// cmd/evalgate, or a password the printed NATS configuration reads.
func TestEnvironmentVariablesExist(t *testing.T) {
	var src bytes.Buffer
	files, _ := filepath.Glob(filepath.Join(root, "cmd", "evalgate", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	known := func(name string) bool {
		for _, r := range jsq.Roles {
			if name == jsq.PasswordEnv(r) {
				return true
			}
		}
		return bytes.Contains(src.Bytes(), []byte(`"`+name+`"`))
	}
	set := map[string]string{} // variable -> where
	for _, o := range manifests(t) {
		if o.Kind == "Deployment" || o.Kind == "StatefulSet" || o.Kind == "Job" {
			for _, c := range decodeSpec[workloadSpec](t, o).Template.Spec.Containers {
				for _, e := range c.Env {
					set[e.Name] = o.file
				}
			}
		}
	}
	for name, s := range composeFile(t).Services {
		for v := range s.Environment {
			set[v] = "docker-compose.yml service " + name
		}
	}
	if len(set) < 5 {
		t.Fatalf("only %d variables found", len(set))
	}
	for name, where := range set {
		if strings.HasPrefix(name, "EVALGATE_") && !known(name) {
			t.Errorf("%s sets %s, which evalgate does not read", where, name)
		}
	}
}

// compose is the part of docker-compose.yml the tests read.
type compose struct {
	Services map[string]struct {
		Command         []string
		Entrypoint      []string
		Environment     map[string]string
		Volumes         []string
		StopGracePeriod string `yaml:"stop_grace_period"`
	}
}

func composeFile(t *testing.T) *compose {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return &c
}

func TestComposeUsersAndConfig(t *testing.T) {
	c := composeFile(t)
	for service, role := range map[string]jsq.Role{"worker": jsq.RoleWorker, "coordinator": jsq.RoleCoordinator, "status": jsq.RoleStatus} {
		s, ok := c.Services[service]
		if !ok {
			t.Errorf("docker-compose.yml has no service %s", service)
			continue
		}
		if s.Environment["EVALGATE_NATS_USER"] != string(role) || !strings.Contains(s.Environment["EVALGATE_NATS_PASSWORD"], jsq.PasswordEnv(role)) {
			t.Errorf("service %s connects as %q with %q, want user %s with $%s", service, s.Environment["EVALGATE_NATS_USER"],
				s.Environment["EVALGATE_NATS_PASSWORD"], role, jsq.PasswordEnv(role))
		}
	}
	w := c.Services["worker"]
	if got, want := flag(w.Command, "metrics-listen"), net.JoinHostPort("0.0.0.0", strconv.Itoa(telemetry.Port)); got != want {
		t.Errorf("worker --metrics-listen %q, want %q", got, want)
	}
	if d, err := time.ParseDuration(w.StopGracePeriod); err != nil || d < drain+10*time.Second {
		t.Errorf("worker stop_grace_period %q: the worker's drain takes up to %s, plus the task being scored", w.StopGracePeriod, drain)
	}
	want, _, err := jsq.ServerConfig(jsq.ConfigOptions{StoreDir: "/data", FromEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "deploy", "nats", "evalgate.conf")); err != nil || string(b) != want {
		t.Errorf("deploy/nats/evalgate.conf is not `evalgate server --print-config --store /data --env-passwords` (%v); print it again", err)
	}
	for _, node := range []string{"nats1", "nats2", "nats3"} {
		s := c.Services[node]
		for _, r := range jsq.Roles {
			if !strings.Contains(s.Environment[jsq.PasswordEnv(r)], jsq.PasswordEnv(r)) {
				t.Errorf("%s: %s not passed to the server, whose configuration reads it", node, jsq.PasswordEnv(r))
			}
		}
		conf := "./deploy/nats/" + node + ".conf:/etc/evalgate/nats.conf:ro"
		if !slices.Contains(s.Volumes, conf) || !slices.Contains(s.Volumes, "./deploy/nats/evalgate.conf:/etc/evalgate/evalgate.conf:ro") ||
			flag(s.Command, "config") != "/etc/evalgate/nats.conf" {
			t.Errorf("%s does not read deploy/nats/%s.conf with evalgate.conf beside it: %q %q", node, node, s.Command, s.Volumes)
		}
		b, err := os.ReadFile(filepath.Join(root, "deploy", "nats", node+".conf"))
		if err != nil || !bytes.Contains(b, []byte("include ./evalgate.conf")) || !bytes.Contains(b, []byte("server_name: "+node)) {
			t.Errorf("deploy/nats/%s.conf does not name the node and include evalgate.conf (%v)", node, err)
		}
	}
}
