// SPDX-License-Identifier: MIT
/* libbpf's view of an object, the oracle of runtime/tests/modern_objects.rs: opens
 * (and with -l loads) OBJ and prints one line per program and per map.
 *
 *   modern_libbpf_view [-l] OBJ
 *
 *   prog <name> <section> <insn_cnt>          (insn_cnt after load: subprograms appended)
 *   map <name> <type> <key_size> <value_size> <max_entries> <flags> <numa_node>
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		vfprintf(stderr, fmt, ap);
	return 0;
}

int main(int argc, char **argv)
{
	int load = argc > 2 && strcmp(argv[1], "-l") == 0;
	const char *path = argv[argc - 1];
	struct bpf_object *obj;
	struct bpf_program *p;
	struct bpf_map *m;

	if (argc < 2)
		return 2;
	libbpf_set_print(quiet);
	obj = bpf_object__open_file(path, NULL);
	if (!obj)
		return 1;
	if (load) {
		/* kprobes load without being attached; autoload stays as the object says */
		if (bpf_object__load(obj)) {
			fprintf(stderr, "load failed\n");
			return 1;
		}
	}
	bpf_object__for_each_program(p, obj)
		printf("prog %s %s %zu\n", bpf_program__name(p), bpf_program__section_name(p),
		       bpf_program__insn_cnt(p));
	bpf_object__for_each_map(m, obj)
		printf("map %s %u %u %u %u %u %u\n", bpf_map__name(m), bpf_map__type(m),
		       bpf_map__key_size(m), bpf_map__value_size(m), bpf_map__max_entries(m),
		       bpf_map__map_flags(m), bpf_map__numa_node(m));
	bpf_object__close(obj);
	return 0;
}
