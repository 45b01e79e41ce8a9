#!/usr/bin/env python3
"""SuperBench's nccl-tests parser, run standalone.

CudaNcclBwBenchmark._process_raw_result below is copied byte for byte from
microsoft/superbenchmark, superbench/benchmarks/micro_benchmarks/cuda_nccl_bw_performance.py
at commit 2c88db907f6738472084185e0ec0c6f6cae20e89 (MIT licence, Copyright (c) Microsoft
Corporation). The module imports the SuperBench framework (logger, BenchmarkRegistry, the
MicroBenchmarkWithInvoke base class), so the method runs here on a small stand-in for `self`:
_args (operation, in_place, log_raw_data), _result (add_raw_data, add_result), _name and
_curr_run_index, and a logger that prints to stderr. See README.md next to this file.

Usage: superbench_nccl_parser.py LOG [--in-place]
Prints "rows N" (the sizes it added a busbw result for) and one "NAME VALUE" line per result;
exits 1 when the method returns False (SuperBench's "the result format is invalid").
"""

import os
import re
import sys


class _Logger:
    def error(self, message):
        print('superbench error: ' + message[:300], file=sys.stderr)


logger = _Logger()


class _Args:
    operation = 'allreduce'
    in_place = False
    log_raw_data = False


class _Result:
    def __init__(self):
        self.results = {}

    def add_raw_data(self, name, value, log=False):
        pass

    def add_result(self, name, value):
        self.results.setdefault(name, []).append(value)


class CudaNcclBwBenchmark:
    def __init__(self, in_place):
        self._args = _Args()
        self._args.in_place = in_place
        self._result = _Result()
        self._name = 'nccl-bw'
        self._curr_run_index = 0

    def _process_raw_result(self, cmd_idx, raw_output):    # noqa: C901
        """Function to parse raw results and save the summarized results.

        self._result.add_raw_data() and self._result.add_result() need to be called to save the results.

        Args:
            cmd_idx (int): the index of command corresponding with the raw_output.
            raw_output (str): raw output string of the micro-benchmark.

        Return:
            True if the raw output string is valid and result can be extracted.
        """
        # If it's invoked by MPI and rank is not 0, empty content is expected
        if os.getenv('OMPI_COMM_WORLD_RANK'):
            rank = int(os.getenv('OMPI_COMM_WORLD_RANK'))
            if rank > 0:
                return True

        self._result.add_raw_data('raw_output_' + self._args.operation, raw_output, self._args.log_raw_data)

        content = raw_output.splitlines()
        size = -1
        busbw_out = -1
        time_out = -1
        algbw_out = -1
        serial_index = os.environ.get('SB_MODE_SERIAL_INDEX', -1)
        parallel_index = os.environ.get('SB_MODE_PARALLEL_INDEX', -1)

        try:
            # Filter useless output
            out_of_place_index = -1
            out_of_bound_index = -1
            for index, line in enumerate(content):
                if 'out-of-place' in line:
                    out_of_place_index = index
                if 'Out of bounds values' in line:
                    out_of_bound_index = index
            content = content[out_of_place_index + 1:out_of_bound_index]
            # Parse max out of bound bus bw as the result
            size_index = -1
            time_index = None
            busbw_index = None
            algbw_index = None
            for line in content:
                if 'time' in line and 'busbw' in line:
                    # Get index of selected column
                    line = line[1:].strip(' ')
                    line = re.sub(r' +', ' ', line).split(' ')
                    # Get first index of condition in list, if it not existing, raise exception
                    size_index = line.index('size')
                    # Need index from the end because sometimes previous fields (like redop) can be empty
                    if self._args.in_place:
                        time_index = -1 - list(reversed(line)).index('time')
                        busbw_index = -1 - list(reversed(line)).index('busbw')
                        algbw_index = -1 - list(reversed(line)).index('algbw')
                    else:
                        time_index = line.index('time') - len(line)
                        busbw_index = line.index('busbw') - len(line)
                        algbw_index = line.index('algbw') - len(line)
                    break
            if size_index != -1 and busbw_index is not None and time_index is not None and algbw_index is not None:
                for line in content:
                    line = line.strip(' ')
                    line = re.sub(r' +', ' ', line).split(' ')
                    # Filter line not started with number
                    if len(line) == 0 or not re.match(r'\d+', line[0]):
                        continue
                    size = int(line[size_index])
                    if size != 0:
                        busbw_out = float(line[busbw_index])
                        time_out = float(line[time_index])
                        algbw_out = float(line[algbw_index])
                        exec_index = '_{}_{}:'.format(
                            serial_index, parallel_index
                        ) if serial_index != -1 and parallel_index != -1 else '_'
                        prefix_name = '{}{}{}_'.format(self._args.operation, exec_index, size)
                        self._result.add_result(prefix_name + 'busbw', busbw_out)
                        self._result.add_result(prefix_name + 'algbw', algbw_out)
                        self._result.add_result(prefix_name + 'time', time_out)
        except BaseException as e:
            logger.error(
                'The result format is invalid - round: {}, benchmark: {}, raw output: {}, message: {}.'.format(
                    self._curr_run_index, self._name, raw_output, str(e)
                )
            )
            return False
        if out_of_place_index == -1 or out_of_bound_index == -1 or busbw_out == -1:
            logger.error(
                'The result format is invalid - round: {}, benchmark: {}, raw output: {}.'.format(
                    self._curr_run_index, self._name, raw_output
                )
            )
            return False

        return True


def main():
    bench = CudaNcclBwBenchmark(in_place='--in-place' in sys.argv[2:])
    with open(sys.argv[1]) as f:
        valid = bench._process_raw_result(0, f.read())
    busbw = sorted(k for k in bench._result.results if k.endswith('_busbw'))
    print('rows {}'.format(len(busbw)))
    for k in busbw:
        print('{} {}'.format(k, bench._result.results[k][-1]))
    sys.exit(0 if valid else 1)


if __name__ == '__main__':
    main()
