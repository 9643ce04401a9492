/* Lists of cores and GPUs in the kernel's syntax: parsing what people and the
 * kernel write, writing what Cpus_allowed_list would say, and the set the
 * supervisor's child pins an instance to. */
#include "cpulist.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

TAP_STATE;

static void test_parse(void)
{
	int ids[16];

	is_int(cpulist_parse("0-3,8,10-11", ids, 16), 7, "ranges and single ids");
	ok(ids[0] == 0 && ids[3] == 3 && ids[4] == 8 && ids[6] == 11, "in order");
	is_int(cpulist_parse("5,1,3-4,1", ids, 16), 4, "any order, repeats once");
	ok(ids[0] == 1 && ids[1] == 3 && ids[2] == 4 && ids[3] == 5, "sorted: 1,3,4,5");
	is_int(cpulist_parse("0-1\n", ids, 16), 2, "Cpus_allowed_list's trailing newline");
	is_int(cpulist_parse(" 2 , 4 ", ids, 16), 2, "blanks around items");
	is_int(cpulist_parse("", ids, 16), 0, "the empty list");
	errno = 0;
	is_int(cpulist_parse("3-1", ids, 16), -1, "a range backwards is refused");
	is_int(errno, EINVAL, "with EINVAL");
	is_int(cpulist_parse("1,", ids, 16), -1, "a trailing comma is refused");
	is_int(cpulist_parse("a", ids, 16), -1, "junk is refused");
	is_int(cpulist_parse("1-", ids, 16), -1, "an open range is refused");
	is_int(cpulist_parse("0\n1", ids, 16), -1, "a newline inside is refused");
	is_int(cpulist_parse("99999", ids, 16), -1, "a core past CPU_SETSIZE is refused");
	errno = 0;
	is_int(cpulist_parse("0-20", ids, 16), -1, "more ids than room");
	is_int(errno, E2BIG, "with E2BIG");
}

static void test_format(void)
{
	char buf[64];
	int a[] = { 0, 1 }, b[] = { 4, 0, 1, 2, 7, 8 }, c[] = { 3 }, small[] = { 10, 11, 12, 13 };

	is_int(cpulist_format(a, 2, true, buf, sizeof buf), 3, "two cores");
	is_str(buf, "0-1", "a run of two is a range, as the kernel writes it");
	cpulist_format(b, 6, true, buf, sizeof buf);
	is_str(buf, "0-2,4,7-8", "sorted, with ranges");
	cpulist_format(b, 6, false, buf, sizeof buf);
	is_str(buf, "0,1,2,4,7,8", "without ranges (CUDA_VISIBLE_DEVICES)");
	cpulist_format(c, 1, true, buf, sizeof buf);
	is_str(buf, "3", "one core");
	cpulist_format(c, 0, true, buf, sizeof buf);
	is_str(buf, "", "none");
	errno = 0;
	is_int(cpulist_format(small, 4, false, buf, 6), -1, "too small a buffer");
	ok(errno == ENOSPC && buf[0] == '\0', "ENOSPC and an empty string");
}

static void test_set(void)
{
	cpu_set_t set;

	is_int(cpulist_to_set("1,3-4", &set), 0, "a list as a set");
	ok(CPU_COUNT(&set) == 3 && CPU_ISSET(1, &set) && CPU_ISSET(3, &set) && CPU_ISSET(4, &set),
	   "holds 1, 3 and 4");
	is_int(cpulist_to_set("1;2", &set), -1, "not a list");
}

int main(void)
{
	test_parse();
	test_format();
	test_set();
	return done_testing();
}
